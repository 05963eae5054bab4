"""A learner's setup needs no root and no npm (README "Two commands"; tools/vendor.py).

The offline book's JavaScript comes from the committed vendor/, checked
against vendor/MANIFEST.json and package.json; the Makefile's `make book` and
`make test` never call sudo, apt-get or npm. `.ci/run` also builds the book as
an unprivileged user with npm and sudo poisoned (tools/learner_book.sh).
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import vendor  # noqa: E402


def test_vendor_matches_its_manifest_and_the_npm_pins():
    assert vendor.verify() == []
    manifest = json.loads((ROOT / "vendor" / "MANIFEST.json").read_text(encoding="utf-8"))
    assert manifest["versions"] == json.loads((ROOT / "package.json").read_text())["dependencies"]


def test_vendor_holds_only_what_the_book_serves_and_the_licences():
    files = {str(p.relative_to(ROOT / "vendor")) for p in (ROOT / "vendor").rglob("*") if p.is_file()}
    served = {f for f in files if f.startswith("mathjax/es5/")} | {"mermaid/mermaid.min.js"}
    assert files == served | {"mathjax/LICENSE", "mermaid/LICENSE", "MANIFEST.json", "README.md"}
    assert "mathjax/es5/tex-mml-chtml.js" in files          # _config.yml's mathjax_path
    size = sum((ROOT / "vendor" / f).stat().st_size for f in files)
    assert size < 30e6, f"vendor/ is {size / 1e6:.1f} MB: only what tools/vendor.py serves belongs there"
    assert "Apache License" in (ROOT / "vendor/mathjax/LICENSE").read_text()
    assert "MIT License" in (ROOT / "vendor/mermaid/LICENSE").read_text()


def test_install_serves_exactly_the_committed_files(tmp_path):
    assert vendor.install(tmp_path / "_vendor") == 0
    served = sorted(str(p.relative_to(tmp_path / "_vendor")) for p in (tmp_path / "_vendor").rglob("*")
                    if p.is_file())
    manifest = json.loads((ROOT / "vendor" / "MANIFEST.json").read_text(encoding="utf-8"))["sha256"]
    expected = sorted([k.replace("mathjax/es5/", "mathjax/", 1) for k in manifest if k.startswith("mathjax/es5/")]
                      + ["mermaid/mermaid.min.js"])
    assert served == expected
    for name in served:
        kept = name.replace("mathjax/", "mathjax/es5/", 1) if name.startswith("mathjax/") else name
        assert vendor._sha256(tmp_path / "_vendor" / name) == manifest[kept]


def test_a_changed_vendored_file_is_refused(tmp_path, monkeypatch, capsys):
    copy = tmp_path / "vendor"
    shutil.copytree(ROOT / "vendor", copy)
    (copy / "mermaid" / "mermaid.min.js").write_text("/* not mermaid */")
    monkeypatch.setattr(vendor, "SOURCE", copy)
    monkeypatch.setattr(vendor, "MANIFEST", copy / "MANIFEST.json")
    assert vendor.verify() == ["vendor/mermaid/mermaid.min.js: SHA-256 differs from MANIFEST.json"]
    assert vendor.install(tmp_path / "_vendor") == 1
    assert "not what MANIFEST.json says" in capsys.readouterr().err
    assert not (tmp_path / "_vendor").exists()


def _make_n(*args):
    """``make -n -B …``: print the recipes, run nothing, as if every target were out of date."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    return subprocess.run(["make", "-n", "-B", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, env=env)


@pytest.mark.parametrize("target", ["book", "test", "vendor", "venv", "assignments"])
def test_make_never_calls_sudo_apt_or_npm(target):
    r = _make_n(target)
    assert r.returncode == 0, r.stderr
    words = r.stdout.replace(";", " ").split()
    for tool in ("sudo", "apt-get", "apt", "npm", "node"):
        assert tool not in words, f"`make {target}` would run {tool}:\n{r.stdout}"
    if target == "book":
        assert "tools/vendor.py" in r.stdout


def test_the_torch_index_is_opt_in():
    r = _make_n("venv")
    assert "--index-url" not in r.stdout and "download.pytorch.org" not in r.stdout
    url = "https://download.pytorch.org/whl/cpu"
    r = _make_n("venv", f"TORCH_INDEX={url}")
    torch_line = [line for line in r.stdout.splitlines() if f"--index-url {url}" in line]
    assert torch_line and "torch==" in torch_line[0], r.stdout
