"""The ``autoreg`` command installed with the wheel (a module of its own: the command
starts without importing torch or the ``autoreg`` package).

It runs ``autoreg/bin/autoreg``, the same C++ program as a source build's
``build/bin/autoreg`` (every subcommand, the same options and outputs), with the
wheel's libraries (``autoreg/lib``, and in a self-contained wheel the system libraries
bundled in ``autoreg.libs``) and the torch this Python finds: its libraries are put on
``LD_LIBRARY_PATH`` (the program's RUNPATH finds a torch installed in the same
site-packages; this finds one elsewhere on ``sys.path`` too). The Python process is
replaced by the program (``os.execv``): exit codes, signals (SIGINT/SIGTERM write a
checkpoint and exit with 4) and standard streams are the program's own.
"""
import importlib.util
import os
import sys


def executable() -> str:
    """The path of the command-line program inside the package."""
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(os.path.dirname(here), "autoreg", "bin", "autoreg")


def torch_library_folders() -> list:
    """torch's lib/ and, where installed, its CUDA libraries' folder (without importing torch)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return []
    torch_dir = list(spec.submodule_search_locations)[0]
    folders = [os.path.join(torch_dir, "lib")]
    cuda = os.path.join(os.path.dirname(torch_dir), "nvidia", "cu13", "lib")
    if os.path.isdir(cuda):
        folders.append(cuda)
    return folders


def main() -> None:
    path = executable()
    if not os.access(path, os.X_OK):
        sys.stderr.write(f"autoreg: {path} is missing or not executable: this package was built without "
                         "the command line (scripts/build-wheel.sh builds the wheel that has it)\n")
        sys.exit(2)
    folders = torch_library_folders()
    if not folders:
        try:
            from ._torch_pin import TORCH_VERSION  # written by the build
        except ImportError:
            TORCH_VERSION = "<the version autoreg was built against>"
        sys.stderr.write(f"autoreg: torch is not installed beside this package (pip install torch=={TORCH_VERSION}, "
                         "the version it was built against)\n")
        sys.exit(2)
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = ":".join(folders + [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p])
    os.execve(path, [path] + sys.argv[1:], env)


if __name__ == "__main__":
    main()
