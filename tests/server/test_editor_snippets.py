"""The editor set-ups the documentation quotes (docs/editors/): each parses in its own
language, starts `tapelint server` for Python, and is quoted verbatim in docs/editors.md."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from lupa import LuaRuntime

ROOT = Path(__file__).resolve().parents[2]
EDITORS = ROOT / "docs" / "editors"
SERVER = ["tapelint", "server"]
SNIPPETS = sorted(path.name for path in EDITORS.iterdir())

# Stand-ins for Neovim's `vim` API that record what the snippet configures, each with only
# the functions that version has (calling another one fails the test, as it fails in that
# Neovim). The FileType autocmd fires at once, for two Python buffers.
VIM_STUB = """
configured, attached, notified = {}, {}, {}
vim = {
  lsp = {},
  fn = {
    has = function(feature) return (feature == "nvim-0.11" and NVIM_0_11) and 1 or 0 end,
    getcwd = function() return "/cwd" end,
  },
  api = {
    nvim_create_autocmd = function(event, options)
      if event == "FileType" and options.pattern == "python" then
        options.callback({ buf = 1 })
        options.callback({ buf = 2 })
      end
    end,
  },
  notify = function(message) table.insert(notified, message) end,
}
"""
NEOVIM_API = {
    "0.11": """
NVIM_0_11 = true
vim.lsp.config = function(name, config) config.name = name; table.insert(configured, config) end
vim.lsp.enable = function(name) configured.enabled = name end
vim.lsp.start = function(config) table.insert(configured, config) end
vim.fs = { root = function(buffer, markers) return "/project" end }
""",
    "0.10": """
vim.lsp.start = function(config) table.insert(configured, config) end
vim.fs = { root = function(buffer, markers) return "/project" end }
""",
    "0.7": """
vim.lsp.start_client = function(config) table.insert(configured, config); return 7 end
vim.lsp.buf_attach_client = function(buffer, client) table.insert(attached, {buffer, client}) end
""",
}


def run_neovim_snippet(name: str, version: str):
    """The Lua globals after `name` ran under the stand-in for Neovim `version`."""
    lua = LuaRuntime()
    lua.execute(VIM_STUB)
    lua.execute(NEOVIM_API[version])
    lua.execute((EDITORS / name).read_text(encoding="utf-8"))  # a syntax error raises here
    return lua.globals()


def lua_list(table) -> list:
    return [table[i] for i in range(1, len(table) + 1)]


def assert_starts_tapelint(config) -> None:
    assert config.name == "tapelint"
    assert [config.cmd[1], config.cmd[2]] == SERVER and len(config.cmd) == 2
    assert dict(config.init_options.items()).keys() == {"ignore", "unsafeFixes"}


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
    # `language-servers` replaces Helix's list: the snippet keeps other servers beside tapelint.
    assert python["language-servers"][-1] == "tapelint" and len(python["language-servers"]) > 1


def test_neovim_0_11_config_and_enable() -> None:
    lua = run_neovim_snippet("neovim.lua", "0.11")
    [config] = lua_list(lua.configured)
    assert_starts_tapelint(config)
    assert lua.configured.enabled == "tapelint" and list(config.filetypes.values()) == ["python"]


def test_neovim_config_snippet_on_an_older_neovim_says_what_to_use() -> None:
    lua = run_neovim_snippet("neovim.lua", "0.7")
    assert lua_list(lua.configured) == []
    [message] = lua_list(lua.notified)
    assert "0.11" in message and "start_client" in message


def test_neovim_start_snippet_on_0_10_starts_a_server_per_buffer_at_the_root() -> None:
    lua = run_neovim_snippet("neovim-lsp-start.lua", "0.10")
    configs = lua_list(lua.configured)
    assert len(configs) == 2  # vim.lsp.start reuses a running client with the same root
    for config in configs:
        assert_starts_tapelint(config)
        assert config.root_dir == "/project"


def test_neovim_start_snippet_on_0_7_starts_one_client_and_attaches_each_buffer() -> None:
    lua = run_neovim_snippet("neovim-lsp-start.lua", "0.7")
    [config] = lua_list(lua.configured)
    assert_starts_tapelint(config)
    assert config.root_dir == "/cwd"
    assert [list(pair.values()) for pair in lua_list(lua.attached)] == [[1, 7], [2, 7]]
