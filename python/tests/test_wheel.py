"""The self-contained wheel's packing (scripts/build-wheel.sh --from-build): the wheel
scripts/build.sh made, repaired by auditwheel (every library outside the manylinux
policy's list bundled, torch's left out) and finished (RUNPATHs to torch, the bundled
libraries' licences), then checked: its contents, and every library each of its ELF
files needs is in the wheel, on the policy's list or torch's (scripts/wheel_tools.py
check). The whole proof on a system without the build's libraries is
scripts/check-wheel.sh, run before a release (docs/install.md#the-wheel)."""
import os
import pathlib
import re
import subprocess
import zipfile

from conftest import BUILD

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_build_packs_into_a_self_contained_wheel(tmp_path):
    env = {**os.environ, "AUTOREG_WHEEL_DIR": str(tmp_path / "dist"), "AUTOREG_WHEEL_WORK": str(tmp_path / "work")}
    out = subprocess.run(["bash", str(ROOT / "scripts" / "build-wheel.sh"), "--from-build", str(BUILD)],
                         capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    wheel = pathlib.Path(out.stdout.strip().splitlines()[-1])
    assert re.search(r"-cp3\d+-cp3\d+-manylinux_2_\d+_x86_64\.whl$", wheel.name), wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    bundled = [n for n in names if n.startswith("autoreg.libs/")]
    # ITK, GDCM and HDF5 come with the wheel; torch does not.
    for library in ("libITKCommon", "libgdcmCommon", "libhdf5"):
        assert any(library in n for n in bundled), (library, bundled)
    assert not any("libtorch" in n or "libc10" in n for n in bundled), bundled
    index = zipfile.ZipFile(wheel).read("autoreg/third_party_licenses/README.txt").decode()
    assert "libinsighttoolkit" in index, index
    # The check counted what the wheel holds.
    counted = re.search(r"(\d+) bundled libraries, (\d+) licence files", out.stdout)
    assert counted and int(counted.group(1)) == len(bundled), out.stdout
    licences = [n for n in names if n.startswith("autoreg/third_party_licenses/") and n.endswith(".txt")]
    assert int(counted.group(2)) == len(licences) - 1 > 0, out.stdout
