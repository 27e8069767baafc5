"""The editor set-ups the documentation quotes (docs/editors/): each parses in its own
language, starts `tapelint server` for Python, and is quoted verbatim in docs/editors.md."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
from lupa import LuaRuntime

ROOT = Path(__file__).resolve().parents[2]
EDITORS = ROOT / "docs" / "editors"
SERVER = ["tapelint", "server"]
SNIPPETS = sorted(path.name for path in EDITORS.iterdir())

# A stand-in for Neovim's `vim` API that records what the snippet configures. The
# FileType autocmd fires at once, for a Python buffer.
VIM_STUB = """
configured = {}
vim = {
  lsp = {
    config = function(name, config) config.name = name; table.insert(configured, config) end,
    enable = function(name) configured.enabled = name end,
    start = function(config) table.insert(configured, config) end,
  },
  api = {
    nvim_create_autocmd = function(event, options)
      if event == "FileType" and options.pattern == "python" then options.callback({ buf = 1 }) end
    end,
  },
  fs = { root = function(buffer, markers) return "/project" end },
}
"""


def test_every_snippet_is_tested_and_quoted_in_the_editors_page() -> None:
    assert SNIPPETS == [
        "helix-languages.toml",
        "jupyter_server_config.json",
        "neovim-lsp-start.lua",
        "neovim.lua",
        "vscode-settings.json",
    ]
    page = (ROOT / "docs" / "editors.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```\w*\n(.*?)```", page, flags=re.DOTALL)
    for name in SNIPPETS:
        assert (EDITORS / name).read_text(encoding="utf-8") in blocks, name


def test_vscode_settings() -> None:
    settings = json.loads((EDITORS / "vscode-settings.json").read_text(encoding="utf-8"))
    command = [settings["glspc.server.command"], *settings["glspc.server.commandArguments"]]
    assert command == SERVER
    assert settings["glspc.server.languageId"] == ["python"]
    assert settings["glspc.server.initializationOptions"] == {"ignore": [], "unsafeFixes": False}


def test_jupyterlab_server_config() -> None:
    config = json.loads((EDITORS / "jupyter_server_config.json").read_text(encoding="utf-8"))
    spec = config["LanguageServerManager"]["language_servers"]["tapelint"]
    assert (spec["version"], spec["argv"], spec["languages"]) == (2, SERVER, ["python"])
    assert "text/x-ipython" in spec["mime_types"]


def test_helix_languages() -> None:
    config = tomllib.loads((EDITORS / "helix-languages.toml").read_text(encoding="utf-8"))
    server = config["language-server"]["tapelint"]
    assert [server["command"], *server["args"]] == SERVER
    assert server["config"] == {"ignore": [], "unsafeFixes": False}
    [python] = [language for language in config["language"] if language["name"] == "python"]
    assert "tapelint" in python["language-servers"]


@pytest.mark.parametrize("name", ["neovim.lua", "neovim-lsp-start.lua"])
def test_neovim(name: str) -> None:
    lua = LuaRuntime()
    lua.execute(VIM_STUB)
    lua.execute((EDITORS / name).read_text(encoding="utf-8"))  # a syntax error raises here
    configured = lua.globals().configured
    [config] = [configured[i] for i in range(1, len(configured) + 1)]
    assert config.name == "tapelint"
    assert [config.cmd[1], config.cmd[2]] == SERVER and len(config.cmd) == 2
    assert dict(config.init_options.items()).keys() == {"ignore", "unsafeFixes"}
    if name == "neovim.lua":
        assert configured.enabled == "tapelint" and list(config.filetypes.values()) == ["python"]
    else:
        assert config.root_dir == "/project"
