"""The recipes in docs/recipes.md name real files: a moved file fails here, naming the recipe to update."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RECIPES = ROOT / "docs" / "recipes.md"
# A backticked repository path: a known top-level folder or file, without <placeholders>.
PATH = re.compile(r"`((?:providers|domain|scheduling|bot|gpubot|db|tests|deploy|docs)/[\w./-]+"
                  r"|\.env\.example|gpubot\.example\.toml)`")


def named_paths() -> dict[str, list[str]]:
    """Recipe title → the repository paths it names."""
    recipes: dict[str, list[str]] = {}
    title = ""
    for line in RECIPES.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            title = line[3:]
            recipes[title] = []
        elif title:
            recipes[title] += [m for m in PATH.findall(line) if "<" not in m]
    return recipes


def test_there_are_three_recipes_and_each_names_files() -> None:
    recipes = named_paths()
    assert list(recipes) == ["Add a cloud provider", "Add a `/gpu` subcommand", "Add a scheduler job"]
    assert all(len(paths) >= 5 for paths in recipes.values()), recipes


def test_every_file_a_recipe_names_exists() -> None:
    missing = [(title, path) for title, paths in named_paths().items() for path in paths
               if not (ROOT / path).exists()]
    assert not missing, f"recipes name files that do not exist (update docs/recipes.md): {missing}"
