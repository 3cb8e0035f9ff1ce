#!/usr/bin/env python3
"""The self-contained wheel's last step and its checks (scripts/build-wheel.sh,
scripts/check-wheel.sh, docs/install.md#the-wheel).

  wheel_tools.py finish WHEEL --out DIR
      after `auditwheel repair`: every ELF file that needs torch's libraries (LibTorch,
      and CUDA's for the plugin) gets RUNPATH entries to torch beside the package
      (site-packages/torch/lib, site-packages/nvidia/cu13/lib), which auditwheel drops
      as pointing outside the wheel; the licences of the bundled system libraries
      (Debian's copyright files) go into autoreg/third_party_licenses with an index;
      its METADATA declares what the package needs: torch pinned to the version the
      libraries were built against (--torch, default scripts/torch-version: their C++
      ABI is that release's), and Requires-Python true to the wheel's tag (cp311 ->
      ==3.11.*); the wheel is written again with its RECORD.
  wheel_tools.py hidden BUILD WHEEL SITE
      the system libraries the source build BUILD links to that a system of the wheel's
      policy need not have (scripts/check-wheel.sh hides them).
  wheel_tools.py check WHEEL
      the wheel's contents and its libraries' dependencies: the command, the libraries,
      the default model, the licences, the METADATA's torch pin and Requires-Python;
      every library an ELF file needs is in the wheel, on the manylinux policy's list,
      or torch's. Prints what it found; exits 1 on a
      problem.

Needs patchelf and readelf (binutils). Only the standard library of Python.
"""
import argparse
import base64
import csv
import fnmatch
import functools
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

# What torch's wheel (and its NVIDIA dependencies) provides; never bundled.
TORCH_LIBS = ["libtorch*", "libc10*", "libgomp*", "libshm*", "libcudart*", "libcupti*", "libnvrtc*",
              "libcublas*", "libcudnn*", "libnccl*", "libcusparse*", "libcufft*", "libcurand*", "libnvJitLink*",
              "libnvToolsExt*", "libcusolver*", "libcufile*", "libnvshmem*"]
# Those of them that are CUDA's (beside torch in site-packages/nvidia/cu13/lib).
CUDA_LIBS = [p for p in TORCH_LIBS if p not in ("libtorch*", "libc10*", "libgomp*", "libshm*")]


def is_torch(name):
    return any(fnmatch.fnmatch(name, p) for p in TORCH_LIBS)


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def needed(path):
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def runpath(path):
    out = subprocess.run(["patchelf", "--print-rpath", path], capture_output=True, text=True, check=True).stdout
    return [p for p in out.strip().split(":") if p]


def elf_files(root):
    for folder, _, files in os.walk(root):
        for f in files:
            p = os.path.join(folder, f)
            if not os.path.islink(p) and is_elf(p):
                yield p


def record_line(root, rel):
    with open(os.path.join(root, rel), "rb") as f:
        data = f.read()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return [rel, f"sha256={digest}", str(len(data))]


def write_wheel(root, path):
    """Zips the unpacked wheel at `root` into `path`, its RECORD written anew."""
    dist_info = next(d for d in os.listdir(root) if d.endswith(".dist-info"))
    record = f"{dist_info}/RECORD"
    files = []
    for folder, _, names in os.walk(root):
        for n in names:
            rel = os.path.relpath(os.path.join(folder, n), root).replace(os.sep, "/")
            if rel != record:
                files.append(rel)
    files.sort(key=lambda r: (r.startswith(dist_info), r))  # dist-info last, as wheels do
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for rel in files:
        writer.writerow(record_line(root, rel))
    writer.writerow([record, "", ""])
    tmp = path + ".part"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for rel in files:
            info = zipfile.ZipInfo.from_file(os.path.join(root, rel), rel)
            info.compress_type = zipfile.ZIP_DEFLATED
            with open(os.path.join(root, rel), "rb") as f:
                z.writestr(info, f.read(), compresslevel=6)
        z.writestr(record, buffer.getvalue())
    os.replace(tmp, path)


def original_soname(bundled):
    """libITKCommon-5-15084a0b.2.so.1 (auditwheel's name: a hash before the first dot)
    → libITKCommon-5.2.so.1."""
    return re.sub(r"-[0-9a-f]{8}(?=\.)", "", bundled, count=1)


@functools.cache
def ldconfig_paths():
    """soname → path of this machine's x86-64 libraries (ldconfig's cache), read once."""
    out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    paths = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\S+) \(libc6,x86-64[^)]*\) => (\S+)", line)
        if m:
            paths.setdefault(m.group(1), m.group(2))
    return paths


def system_path(soname):
    if soname in ldconfig_paths():
        return ldconfig_paths()[soname]
    for d in ("/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib", "/usr/local/lib"):
        if os.path.exists(os.path.join(d, soname)):
            return os.path.join(d, soname)
    return None


def debian_package(path):
    """The Debian package that installed `path` (tried as given, resolved, and under /lib
    and /usr/lib, which Debian 12 merges), or None."""
    candidates = []
    for c in (path, os.path.realpath(path)):
        candidates += [c, c.replace("/usr/lib/", "/lib/", 1), c.replace("/lib/", "/usr/lib/", 1)]
    for p in dict.fromkeys(candidates):
        r = subprocess.run(["dpkg", "-S", p], capture_output=True, text=True)
        if r.returncode == 0:
            return r.stdout.split(":")[0].strip()
    return None


def add_licences(root):
    """autoreg/third_party_licenses: one copyright file per Debian package bundled."""
    libs_dir = next((os.path.join(root, d) for d in os.listdir(root) if d.endswith(".libs")), None)
    target = os.path.join(root, "autoreg", "third_party_licenses")
    os.makedirs(target, exist_ok=True)
    index = ["The system libraries bundled in this wheel (autoreg.libs/), the Debian package each",
             "was taken from, and its copyright and licence file here. torch and CUDA are not",
             "bundled: they are the torch package's own.", ""]
    packages = {}
    missing = []
    for lib in sorted(os.listdir(libs_dir)) if libs_dir else []:
        soname = original_soname(lib)
        path = system_path(soname)
        package = debian_package(path) if path else None
        if not package:
            missing.append(lib)
            index.append(f"{lib}  ({soname}): package not found")
            continue
        if package not in packages:
            packages[package] = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True,
                                               text=True).stdout
        index.append(f"{lib}  ({soname})  {package} {packages[package]}  {package}.txt")
    for package in packages:
        src = f"/usr/share/doc/{package}/copyright"
        if os.path.exists(src):
            shutil.copyfile(src, os.path.join(target, f"{package}.txt"))
        else:
            missing.append(f"{package} (no {src})")
    with open(os.path.join(target, "README.txt"), "w") as f:
        f.write("\n".join(index) + "\n")
    return packages, missing


def python_requirement(wheel):
    """Requires-Python for a wheel's CPython tag: cp311 -> ==3.11.*."""
    m = re.search(r"-cp(\d)(\d+)-", os.path.basename(wheel))
    if not m:
        raise SystemExit(f"wheel_tools: {wheel} has no cpXY tag")
    return f"=={m.group(1)}.{m.group(2)}.*"


def set_requirements(root, torch_version, requires_python):
    """The unpacked wheel's METADATA with `Requires-Dist: torch==V` (replacing any torch
    requirement) and `Requires-Python` set; the other lines kept in order."""
    dist_info = next(d for d in os.listdir(root) if d.endswith(".dist-info"))
    path = os.path.join(root, dist_info, "METADATA")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    head, sep, body = text.partition("\n\n")  # the headers, then the description
    lines = [l for l in head.split("\n") if not re.match(r"Requires-Dist: *torch\b", l) and not l.startswith("Requires-Python:")]
    at = max([i + 1 for i, l in enumerate(lines) if l.startswith(("Requires-Dist:", "Summary:", "Version:"))] or [len(lines)])
    lines[at:at] = [f"Requires-Python: {requires_python}", f"Requires-Dist: torch=={torch_version}"]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + sep + body)


def requirements(metadata):
    """(the torch requirement, Requires-Python) of a wheel's METADATA text; None where absent."""
    headers = metadata.split("\n\n")[0].split("\n")
    torch = [l.split(":", 1)[1].strip()[len("torch"):].strip() for l in headers if re.match(r"Requires-Dist: *torch\b", l)]
    python = [l.split(":", 1)[1].strip() for l in headers if l.startswith("Requires-Python:")]
    return (torch[0] if torch else None), (python[0] if python else None)


def finish(args):
    wheel = os.path.abspath(args.wheel)
    with tempfile.TemporaryDirectory() as tmp:
        with zipfile.ZipFile(wheel) as z:
            z.extractall(tmp)
        files = list(elf_files(tmp))
        patched = []
        for f in files:
            libs = needed(f)
            if not any(is_torch(n) for n in libs):
                continue
            site = os.path.relpath(tmp, os.path.dirname(f))  # the site-packages folder, relative
            extra = [f"$ORIGIN/{site}/torch/lib"]
            if any(fnmatch.fnmatch(n, p) for n in libs for p in CUDA_LIBS):
                extra.append(f"$ORIGIN/{site}/nvidia/cu13/lib")
            entries = [e for e in runpath(f) if e not in extra] + extra
            subprocess.run(["patchelf", "--set-rpath", ":".join(entries), f], check=True)
            patched.append(os.path.relpath(f, tmp))
        for f in files:  # executables keep their mode through the zip
            if "/bin/" in f:
                os.chmod(f, 0o755)
        packages, missing = add_licences(tmp)
        set_requirements(tmp, args.torch, python_requirement(wheel))
        os.makedirs(args.out, exist_ok=True)
        out = os.path.join(args.out, os.path.basename(wheel))
        write_wheel(tmp, out)
    print(f"wheel_tools finish: {out}: RUNPATH to torch in {len(patched)} files; licences of {len(packages)} Debian packages; "
          f"requires torch=={args.torch}, Python {python_requirement(wheel)}")
    if missing:
        print("wheel_tools finish: no licence found for: " + ", ".join(missing), file=sys.stderr)
        return 1
    return 0


def manylinux_list(policy):
    import auditwheel  # only for its policy's list of libraries a system provides
    path = os.path.join(os.path.dirname(auditwheel.__file__), "policy", "manylinux-policy.json")
    for p in json.load(open(path)):
        if p["name"] == policy:
            return set(p["lib_whitelist"])
    raise SystemExit(f"wheel_tools: no manylinux policy {policy}")


def wheel_policy(wheel):
    """The manylinux policy of a wheel's tag (manylinux_2_NN), or None."""
    m = re.search(r"-(manylinux_\d+_\d+)_x86_64\.whl$", wheel)
    return m.group(1) if m else None


def hidden(args):
    """The system libraries the source build in args.build links to that a system of the
    wheel's policy need not have: not on the policy's list, not loaded by Debian's python3
    importing torch (from args.site), not the build's or torch's own."""
    policy = wheel_policy(args.wheel)
    if not policy:
        raise SystemExit(f"wheel_tools: {args.wheel} is not tagged manylinux_2_NN_x86_64")
    allowed = manylinux_list(policy)
    files = [os.path.join(args.build, "bin", "autoreg")] + sorted(
        os.path.join(args.build, "lib", f) for f in os.listdir(os.path.join(args.build, "lib"))
        if f.startswith("libautoreg_") and f.endswith(".so"))
    used = set()
    for f in files:
        for line in subprocess.run(["ldd", f], capture_output=True, text=True).stdout.splitlines():
            parts = line.split("=>")
            if len(parts) == 2 and parts[1].strip().startswith("/"):
                used.add(parts[1].split("(")[0].strip())
    probe = f"import sys; sys.path.append({args.site!r}); import torch, numpy; print(open('/proc/self/maps').read())"
    maps = subprocess.run(["/usr/bin/python3", "-c", probe], capture_output=True, text=True, check=True).stdout
    python_libs = {os.path.realpath(l.split()[-1]) for l in maps.splitlines() if ".so" in l and l.split()[-1].startswith("/")}
    own = (os.path.realpath(args.build), os.path.realpath(args.site))
    for path in sorted(used):
        real = os.path.realpath(path)
        if real.startswith(own) or "/site-packages/" in real:
            continue
        if os.path.basename(path) not in allowed and real not in python_libs:
            print(real)
    return 0


def check(args):
    wheel = os.path.abspath(args.wheel)
    policy = wheel_policy(wheel)
    problems = []
    if not policy:
        problems.append(f"{os.path.basename(wheel)}: not tagged manylinux_2_NN_x86_64")
    # The policy's list, and the dynamic loader itself (part of glibc, always there).
    allowed = manylinux_list(policy or "manylinux_2_36") | {"ld-linux-x86-64.so.2"}
    with tempfile.TemporaryDirectory() as tmp:
        with zipfile.ZipFile(wheel) as z:
            names = z.namelist()
            z.extractall(tmp)
        for must in ("autoreg/bin/autoreg", "autoreg/share/autoreg/default.autoreg", "autoreg/lib/libautoreg_pair.so",
                     "autoreg/lib/libautoreg_runs.so", "autoreg/lib/libautoreg_ops.so", "autoreg_cli/__init__.py",
                     "autoreg/third_party_licenses/README.txt"):
            if must not in names:
                problems.append(f"missing {must}")
        if not any(n.endswith("entry_points.txt") for n in names):
            problems.append("no entry_points.txt (the autoreg command)")
        bundled = sorted(n.split("/")[-1] for n in names if n.startswith("autoreg.libs/"))
        files = list(elf_files(tmp))
        inside = {os.path.basename(f) for f in files}
        checked = len(files)
        for f in files:
            deps = needed(f)
            for n in deps:
                if n in inside or n in allowed or is_torch(n):
                    continue
                problems.append(f"{os.path.relpath(f, tmp)} needs {n}: neither in the wheel, on {policy}'s list nor torch's")
            if any(is_torch(n) for n in deps) and not any("torch/lib" in e for e in runpath(f)):
                problems.append(f"{os.path.relpath(f, tmp)} needs torch but has no RUNPATH to torch/lib")
        licences = [n for n in names if n.startswith("autoreg/third_party_licenses/") and n.endswith(".txt")]
        metadata = next((n for n in names if n.endswith(".dist-info/METADATA")), None)
        torch_pin, python_pin = requirements(open(os.path.join(tmp, metadata), encoding="utf-8").read()) if metadata else (None, None)
        if not (torch_pin and re.fullmatch(r"==\d+\.\d+\.\d+", torch_pin)):
            problems.append(f"METADATA does not pin torch to one release (Requires-Dist: torch{torch_pin or ' missing'})")
        if policy and python_pin != python_requirement(wheel):
            problems.append(f"METADATA's Requires-Python is {python_pin}, the tag says {python_requirement(wheel)}")
    size = os.path.getsize(wheel) / 2**20
    print(f"wheel_tools check: {os.path.basename(wheel)} ({size:.0f} MiB): {checked} ELF files, "
          f"{len(bundled)} bundled libraries, {len(licences) - 1} licence files; requires torch{torch_pin}, Python {python_pin}")
    for p in problems:
        print(f"  problem: {p}")
    return 1 if problems else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    f = sub.add_parser("finish")
    f.add_argument("wheel")
    f.add_argument("--out", required=True)
    f.add_argument("--torch", default=open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch-version")).read().strip(),
                   help="the torch release the libraries were built against (default: scripts/torch-version)")
    c = sub.add_parser("check")
    c.add_argument("wheel")
    h = sub.add_parser("hidden")
    h.add_argument("build")
    h.add_argument("wheel")
    h.add_argument("site")
    args = parser.parse_args()
    return {"finish": finish, "check": check, "hidden": hidden}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
