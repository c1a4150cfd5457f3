"""Peer libraries the benchmarks compare against, each in its own virtual environment under the cache directory.

Usage::

    python -m benchmarks.peers install particles     # create (or re-create with --force) the peer's venv
    python -m benchmarks.peers list                  # peers, their pins and whether they are installed
    python -m benchmarks.peers path particles        # the peer's Python interpreter

A peer lives in its own venv because its pins clash with ours (``particles`` needs numpy < 2; ``gpy-abcd`` pins
numpy 1.23.5 in its metadata, so its pinned dependencies are installed first and GPy-ABCD itself ``--no-deps`` on
top, ``NO_DEPS``). The root is
``$ZOO_PEERS_DIR``, else ``peers/`` next to the JAX compile cache (``~/.cache/structured-gp-zoo/peers``,
``zoo.config``).
An install is built in a temporary sibling directory and renamed into place only when ``pip`` and an import check
succeed, so a killed or failed install leaves no half-made peer (at most a ``.tmp-*`` directory that the next
install removes).
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from zoo.config import DEFAULT_CACHE_DIR

# name -> (pip requirements, import statement checked after install). Pins: the versions the published benchmark
# numbers were measured with.
PEERS: dict[str, tuple[tuple[str, ...], str]] = {
    "particles": (("particles==0.4", "numpy<2"), "import particles, particles.state_space_models"),
    "gpy-abcd": (
        (
            "numpy==1.26.4",
            "scipy==1.11.4",
            "GPy==1.13.2",
            "numba==0.68.1",
            "matplotlib==3.11.2",
            "pandas==3.0.6",
            "plotnine==0.15.9",
        ),
        "import GPy_ABCD; from GPy_ABCD import explore_model_space",
    ),
}
# name -> requirements installed after PEERS' with ``pip install --no-deps`` (a package whose own metadata pins
# versions that clash with the ones above).
NO_DEPS: dict[str, tuple[str, ...]] = {"gpy-abcd": ("GPy-ABCD==1.2.3",)}


class PeerMissing(RuntimeError):
    """A benchmark needs a peer that is not installed; the message says the command that installs it."""


def peers_root() -> Path:
    """Where peers' venvs live: ``$ZOO_PEERS_DIR``, else ``peers/`` beside the default JAX cache."""
    override = os.environ.get("ZOO_PEERS_DIR")
    return Path(override).expanduser() if override else DEFAULT_CACHE_DIR.parent / "peers"


def install_command(name: str) -> str:
    return f"python -m benchmarks.peers install {name}"


def peer_dir(name: str) -> Path:
    if name not in PEERS:
        raise KeyError(f"unknown peer {name!r}; known: {', '.join(PEERS)}")
    return peers_root() / name


def peer_python(name: str) -> Path:
    """The peer's interpreter; raises PeerMissing (with the install command) when the peer is not installed."""
    python = peer_dir(name) / "bin" / "python"
    if not python.exists():
        raise PeerMissing(
            f"peer {name!r} is not installed (looked in {peer_dir(name)}); install it with: {install_command(name)}"
        )
    return python


def install(name: str, force: bool = False, python: str = sys.executable) -> Path:
    """Create the peer's venv atomically (build in a temporary sibling, check the import, rename); returns its dir."""
    target = peer_dir(name)
    if target.exists() and not force:
        print(f"{name}: already installed at {target} (--force to re-create)")
        return target
    requirements, check = PEERS[name]
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in target.parent.glob(f".tmp-{name}-*"):  # left by a killed install
        shutil.rmtree(stale, ignore_errors=True)
    # a venv finds its site-packages from bin/python's location, so it survives the rename; only console scripts
    # (bin/pip shebangs) keep the temporary path, hence everything goes through `bin/python -m ...`
    build = Path(tempfile.mkdtemp(prefix=f".tmp-{name}-", dir=target.parent))
    try:
        subprocess.run([python, "-m", "venv", str(build)], check=True)
        pip = [str(build / "bin" / "python"), "-m", "pip", "install", "--quiet"]
        subprocess.run([*pip, *requirements], check=True)
        if NO_DEPS.get(name):
            subprocess.run([*pip, "--no-deps", *NO_DEPS[name]], check=True)
        subprocess.run([str(build / "bin" / "python"), "-c", check], check=True)
        if target.exists():
            shutil.rmtree(target)
        build.rename(target)
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        raise
    print(f"{name}: installed at {target} ({', '.join(requirements + NO_DEPS.get(name, ()))})")
    return target


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_install = sub.add_parser("install", help="create a peer's venv under the cache directory")
    p_install.add_argument("names", nargs="+", choices=sorted(PEERS))
    p_install.add_argument("--force", action="store_true", help="re-create an installed peer")
    sub.add_parser("list", help="peers, pins and install state")
    p_path = sub.add_parser("path", help="print a peer's Python interpreter")
    p_path.add_argument("name", choices=sorted(PEERS))
    args = parser.parse_args(argv)
    if args.command == "install":
        for name in args.names:
            install(name, force=args.force)
    elif args.command == "list":
        for name, (requirements, _) in PEERS.items():
            state = "installed" if (peer_dir(name) / "bin" / "python").exists() else "missing"
            print(f"{name}\t{' '.join(requirements + NO_DEPS.get(name, ()))}\t{state}\t{peer_dir(name)}")
    else:
        try:
            print(peer_python(args.name))
        except PeerMissing as err:
            sys.exit(str(err))


if __name__ == "__main__":
    main()
