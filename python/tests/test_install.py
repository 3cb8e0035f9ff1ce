"""A fresh virtual environment installs the package (the wheel scripts/build.sh made)
and registers with it. torch and numpy come from the setup's environment (a .pth
file), so that nothing is downloaded."""
import glob
import os
import pathlib
import subprocess
import sys
import sysconfig

from conftest import BUILD


def test_fresh_environment_installs_the_wheel(tmp_path):
    wheels = glob.glob(str(BUILD / "python-dist" / "autoreg-*.whl"))
    assert len(wheels) == 1, "scripts/build.sh builds one wheel into build/python-dist"
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheels[0]], check=True)
    # then torch and numpy from the setup's environment, behind the fresh one's own packages
    (pathlib.Path(site) / "setup_env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    script = ("import autoreg, numpy as np, os\n"
              "assert autoreg.__file__.startswith(os.environ['VENV']), autoreg.__file__\n"
              "a = np.zeros((16, 16, 16), np.float32); a[4:12, 5:11, 6:10] = 1\n"
              "r = autoreg.register(a, np.roll(a, 1, 0), iterations=[5, 5], affine=False)\n"
              "assert r.field.shape == (16, 16, 16, 3)\n"
              "print('ok', autoreg.load_model('default').info.grid)\n")
    out = subprocess.run([str(python), "-c", script], capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "VENV": str(venv)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok (80, 80, 96)")


def test_the_wheel_carries_the_command(tmp_path):
    """`autoreg` (the script pip writes, autoreg_cli) runs the program inside the wheel."""
    wheels = glob.glob(str(BUILD / "python-dist" / "autoreg-*.whl"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheels[0]], check=True)
    command = venv / "bin" / "autoreg"
    # Without torch the script says so (the program needs LibTorch) ...
    out = subprocess.run([str(command), "--help"], capture_output=True, text=True)
    assert out.returncode == 2 and "torch is not installed" in out.stderr, (out.returncode, out.stderr)
    # ... and with torch seen from the setup's environment, it runs the program.
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (pathlib.Path(site) / "setup_env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    out = subprocess.run([str(command), "register", "--help"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "--out-field" in out.stdout
    # A bad input is the program's own error and exit code (2: bad input), not Python's.
    out = subprocess.run([str(command), "register", "--fixed", str(tmp_path / "none.nii.gz"), "--moving",
                          str(tmp_path / "none.nii.gz"), "--out-field", str(tmp_path / "f.nii.gz"),
                          "--out-warped", str(tmp_path / "w.nii.gz")], capture_output=True, text=True)
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert "none.nii.gz" in out.stderr
