"""The native Codex binary behind the npm wrapper, and the environment the wrapper gives it.

``npm install @openai/codex`` installs ``bin/codex.js``: a Node script that finds the
platform package (``@openai/codex-linux-x64`` …), sets a few ``CODEX_MANAGED_*``
variables and starts ``vendor/<target triple>/bin/codex``.  Node's start is about a
quarter of a whole ``codex exec`` against an instant server (measured on 0.171: 0.12 s
wall and 0.10 CPU-s through the wrapper, 0.013 s / 0.009 CPU-s for the binary itself),
and on a Node without ``process.execve`` the wrapper stays alive as the binary's parent.

:func:`resolve` does what ``codex.js`` of Codex 0.171 does, in Python, so the runner can
start the binary itself.  Anything it cannot follow exactly (not the npm wrapper, no
platform package, an unknown platform, a binary that is not there) gives ``None`` and the
runner launches what it was given, as before: the wrapper then decides, and reports its
own error.  ``--advreview-codex`` may name either the wrapper or a native binary.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MANAGED_BY_VARS", "NativeCodex", "resolve"]

#: ``codex.js``: the platform package of each Rust target triple.
_PLATFORM_PACKAGES = {
    "x86_64-unknown-linux-musl": "@openai/codex-linux-x64",
    "aarch64-unknown-linux-musl": "@openai/codex-linux-arm64",
    "x86_64-apple-darwin": "@openai/codex-darwin-x64",
    "aarch64-apple-darwin": "@openai/codex-darwin-arm64",
}

#: The variables the wrapper clears before setting the one of its package manager.
MANAGED_BY_VARS = (
    "CODEX_MANAGED_BY_NPM",
    "CODEX_MANAGED_BY_BUN",
    "CODEX_MANAGED_BY_PNPM",
    "CODEX_MANAGED_BY_VITE_PLUS",
)


@dataclass(frozen=True)
class NativeCodex:
    """How to start the native binary that an npm wrapper would start."""

    #: The platform binary, an absolute path.
    binary: str
    #: Variables to set on top of the launch environment (the wrapper's additions).
    set_env: dict[str, str]
    #: Variables to remove from the launch environment (the wrapper deletes them).
    unset_env: tuple[str, ...]

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """``env`` changed the way the wrapper changes it for the binary."""
        out = {k: v for k, v in env.items() if k not in self.unset_env}
        out.update(self.set_env)
        return out


def resolve(executable: str, env: Mapping[str, str]) -> NativeCodex | None:
    """The native launch behind the npm wrapper ``executable``; ``None`` to launch it as is.

    :param executable: ``--advreview-codex``: a name looked up on ``env``'s ``PATH``, or a
        path.  A native binary (not the wrapper) gives ``None``: it is launched directly.
    :param env: the environment the wrapper would run with (``PATH`` and the package
        manager's ``npm_config_user_agent`` / ``npm_execpath`` are read).
    """
    found = shutil.which(executable, path=env.get("PATH")) if "/" not in executable else executable
    if found is None:
        return None
    try:
        script = Path(found).resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    package_root = script.parent.parent
    if script.name != "codex.js" or script.parent.name != "bin":
        return None
    if _package_name(package_root / "package.json") != "@openai/codex":
        return None
    triple = _target_triple()
    if triple is None:
        return None
    binary = _find_binary(script.parent, package_root, triple)
    if binary is None:
        return None
    manager = _package_manager(package_root, Path(os.path.abspath(found)).parent, script, env)
    return NativeCodex(
        binary=str(binary),
        set_env={"CODEX_MANAGED_PACKAGE_ROOT": str(package_root), manager: "1"},
        unset_env=tuple(v for v in MANAGED_BY_VARS if v != manager),
    )


def _package_name(path: Path) -> str | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    name = data.get("name") if isinstance(data, dict) else None
    return name if isinstance(name, str) else None


def _target_triple() -> str | None:
    """``codex.js``'s switch on Node's ``process.platform`` and ``process.arch``."""
    system = platform.system()
    machine = platform.machine().lower()
    arch = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}
    cpu = arch.get(machine)
    if cpu is None:
        return None
    if system == "Linux":
        return f"{cpu}-unknown-linux-musl"
    if system == "Darwin":
        return f"{cpu}-apple-darwin"
    return None  # Windows is not supported by the plugin (process groups)


def _find_binary(script_dir: Path, package_root: Path, triple: str) -> Path | None:
    """``findCodexExecutable``: the platform package as Node resolves it, else ``vendor/``.

    Node's ``require.resolve("<pkg>/package.json")`` from ``bin/codex.js`` looks in
    ``node_modules/<pkg>`` of the script's folder and of every ancestor (skipping
    folders that are themselves called ``node_modules``); that covers npm's flat layout,
    a nested install and pnpm's ``.pnpm/…/node_modules``.
    """
    package = _PLATFORM_PACKAGES[triple]
    vendor_root = package_root / "vendor"
    for folder in (script_dir, *script_dir.parents):
        if folder.name == "node_modules":
            continue
        candidate = folder / "node_modules" / package / "package.json"
        if candidate.is_file():
            vendor_root = candidate.parent / "vendor"
            break
    binary = vendor_root / triple / "bin" / "codex"
    return binary if binary.is_file() and os.access(binary, os.X_OK) else None


def _package_manager(
    package_root: Path, entry_dir: Path, script: Path, env: Mapping[str, str]
) -> str:
    """``detectPackageManager`` → the ``CODEX_MANAGED_BY_*`` variable the wrapper sets."""
    for start in dict.fromkeys((package_root, entry_dir)):
        for folder in (start, *start.parents):
            if folder == Path(folder.anchor):
                break
            if _vite_plus_owns(folder, package_root):
                return "CODEX_MANAGED_BY_VITE_PLUS"
            if _pnpm_owns(folder / "node_modules", package_root):
                return "CODEX_MANAGED_BY_PNPM"
        if _pnpm_owns(Path(start.anchor) / "node_modules", package_root):
            return "CODEX_MANAGED_BY_PNPM"
    user_agent = env.get("npm_config_user_agent", "")
    bun_dir = any(
        part in str(script.parent) for part in (".bun/install/global", ".bun\\install\\global")
    )
    if "bun/" in user_agent or "bun" in env.get("npm_execpath", "") or bun_dir:
        return "CODEX_MANAGED_BY_BUN"
    return "CODEX_MANAGED_BY_NPM"


def _same(path: Path, package_root: Path) -> bool:
    try:
        return path.exists() and path.resolve() == package_root
    except (OSError, RuntimeError):
        return False


def _pnpm_owns(node_modules: Path, package_root: Path) -> bool:
    return (node_modules / ".modules.yaml").exists() and _same(
        node_modules / "@openai" / "codex", package_root
    )


def _vite_plus_owns(packages: Path, package_root: Path) -> bool:
    if packages.name != "packages":
        return False
    try:
        meta = json.loads((packages / "@openai" / "codex.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(meta, dict) or meta.get("name") != "@openai/codex":
        return False
    install_id = meta.get("installId") or ""
    if not isinstance(install_id, str):
        return False
    install = (
        packages / f"@openai/codex{install_id}"
        if install_id.startswith("#")
        else packages / "@openai" / "codex" / install_id
    )
    return any(
        _same(modules / "@openai" / "codex", package_root)
        for modules in (install / "lib" / "node_modules", install / "node_modules")
    )
