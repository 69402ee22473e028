"""The machine and the versions measured, for bench/RESULTS.md (used by bench/report.py)."""

import os
import platform
import re
import subprocess
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))




def run_cmd(argv, stderr=False):
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    return (p.stderr if stderr else p.stdout).strip()


def dpkg_version(package):
    return run_cmd(["dpkg-query", "-W", "-f=${Version}", package])


def machine():
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count()
    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB RAM"
                    break
    except OSError:
        pass
    parts = [f"{cpus} CPU cores (nproc)", model or platform.processor() or "unknown CPU", mem]
    kernel = f"{platform.system()} {platform.release()}"
    return ", ".join(p for p in parts if p), kernel


def jar_version(jar):
    """The Maven version recorded in a jar (pom.properties, else the manifest)."""
    try:
        with zipfile.ZipFile(jar) as z:
            texts = [z.read(n).decode("utf-8", "replace") for n in z.namelist() if n.endswith("/pom.properties")]
            texts.append(z.read("META-INF/MANIFEST.MF").decode("utf-8", "replace"))
    except (OSError, KeyError, zipfile.BadZipFile):
        return ""
    for text in texts:
        for key in ("version=", "Bundle-Version: *", "Implementation-Version: *"):
            m = re.search(rf"^{key}(\S+)", text, re.M)
            if m:
                return m.group(1)
    return ""


def cargo_lock_version(name):
    try:
        with open(os.path.join(ROOT, "Cargo.lock"), encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return ""
    m = re.search(rf'name = "{re.escape(name)}"\nversion = "([^"]+)"', text)
    return m.group(1) if m else ""


def versions(srvr_path):
    v = {}
    zk = ""
    if srvr_path and os.path.exists(srvr_path):
        with open(srvr_path, encoding="utf-8", errors="replace") as f:
            m = re.search(r"Zookeeper version: ([^,\n]+)", f.read())
            # Debian's build leaves an unexpanded "-${mvngit.commit.id}" in the version
            zk = re.sub(r"-\$\{[^}]*\}", "", m.group(1)).strip() if m else ""
    deb = dpkg_version("zookeeper")
    v["ZooKeeper"] = " ".join(x for x in (zk or "?", f"(Debian package {deb})" if deb else "") if x)
    jars = os.environ.get("ZK_RECIPES_CURATOR_JARS", "/usr/share/java")
    cur = jar_version(os.path.join(jars, "curator-recipes.jar"))
    deb = dpkg_version("libcurator-recipes-java")
    v["Apache Curator"] = " ".join(x for x in (cur or "?", f"(Debian package {deb})" if deb else "") if x)
    venv_python = os.path.join(ROOT, "bench", "out", "venv", "bin", "python")
    kz = run_cmd([venv_python, "-c", "import importlib.metadata as m, platform; "
                  "print(m.version('kazoo'), 'on Python', platform.python_version())"])
    v["kazoo"] = kz or "not installed"
    java = run_cmd(["java", "-version"], stderr=True).splitlines()
    v["Java (Curator)"] = java[0] if java else "?"
    v["rustc"] = run_cmd(["rustc", "--version"]) or "?"
    v["zookeeper-client (crate)"] = cargo_lock_version("zookeeper-client") or "?"
    commit = run_cmd(["git", "-C", ROOT, "describe", "--always", "--dirty"])
    v["zk-recipes"] = f"{cargo_lock_version('zk-recipes') or '?'} (commit {commit})" if commit else "?"
    return v
