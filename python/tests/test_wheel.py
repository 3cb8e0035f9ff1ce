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
    # The METADATA declares what the package needs: the torch it was built against and
    # the Python of its tag (wheel_tools.py check verified both; here read again).
    metadata = next(zipfile.ZipFile(wheel).read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
    torch_version = (ROOT / "scripts" / "torch-version").read_text().strip()
    tag = re.search(r"-cp(\d)(\d+)-", wheel.name)
    assert f"Requires-Dist: torch=={torch_version}\n" in metadata, metadata[:800]
    assert f"Requires-Python: =={tag.group(1)}.{tag.group(2)}.*\n" in metadata, metadata[:800]
    assert "Requires-Dist: numpy" in metadata, metadata[:800]
    check_pip_resolves_the_pin(wheel, torch_version, tmp_path)


def check_pip_resolves_the_pin(wheel, torch_version, tmp_path):
    """pip, offline, into a fresh venv that sees the setup's packages through a .pth file:
    with numpy there but not torch the wheel is refused for want of torch==V (the pin is
    read: online, pip fetches it); with torch there too it installs with its dependencies
    resolved (no --no-deps) and `import autoreg` works."""
    import torch

    venv = tmp_path / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", str(venv)], check=True)
    site = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    # The setup's packages seen through links, less the source build's autoreg, which
    # pip would take for this one already installed.
    beside = tmp_path / "torch-site"
    beside.mkdir()
    (pathlib.Path(site) / "torch-beside.pth").write_text(f"{beside}\n")
    torch_site = pathlib.Path(torch.__file__).parents[1]
    entries = [e for e in torch_site.iterdir() if not e.name.lower().startswith("autoreg")]
    for entry in entries:
        if entry.name.lower().startswith("numpy"):
            (beside / entry.name).symlink_to(entry)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--no-index", "--disable-pip-version-check", str(wheel)]
    without_torch = subprocess.run(pip, capture_output=True, text=True)
    out = without_torch.stdout + without_torch.stderr
    assert without_torch.returncode != 0 and f"requirement torch=={torch_version}" in out, out
    for entry in entries:
        if not (beside / entry.name).exists():
            (beside / entry.name).symlink_to(entry)
    installed = subprocess.run(pip, capture_output=True, text=True)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    imported = subprocess.run([str(venv / "bin" / "python"), "-c", "import autoreg, torch; print(autoreg.__file__, torch.__version__)"],
                              capture_output=True, text=True)
    assert imported.returncode == 0 and str(venv) in imported.stdout, imported.stdout + imported.stderr
