"""Render the Helm chart in Python, for the subset of Go-template syntax the chart uses (helm is not installable
here). Supported: `{{ .Values.a.b }}`, `.Release.*`, `.Chart.*`, `$var`, `$.`, pipelines through `quote`,
`toYaml`, `indent N`, `nindent N`; `fail "message"`; `{{- if X }}…{{- else }}…{{- end }}`;
`{{- range $k, $v := X }}…{{- end }}` over maps (sorted by key, as Go does); `{{/* comments */}}`;
`{{-` / `-}}` whitespace trimming.

`python -m tests.integration.deploy.helm_render` rewrites deploy/k8s/ from deploy/helm/gpubot/.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

__all__ = ["CHART", "K8S", "render_chart", "write_manifests"]

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "deploy" / "helm" / "gpubot"
K8S = ROOT / "deploy" / "k8s"
RELEASE = {"Name": "gpubot", "Namespace": "default"}
HEADER = ("# Rendered from deploy/helm/gpubot (release name gpubot, default values) by\n"
          "# `python -m tests.integration.deploy.helm_render`; edit the chart, not this file.\n")
_ACTION = re.compile(r"{{(-?)\s*(.*?)\s*(-?)}}", re.DOTALL)
_RANGE = re.compile(r"range\s+\$(\w+),\s*\$(\w+)\s*:=\s*(.+)")


def _tokens(text: str) -> list[tuple[str, str]]:
    """Text and action tokens, with `{{-` / `-}}` trimming applied to the neighbouring text."""
    out: list[tuple[str, str]] = []
    pos, trim_next = 0, False
    for match in _ACTION.finditer(text):
        chunk = text[pos:match.start()]
        chunk = chunk.lstrip() if trim_next else chunk
        out.append(("text", chunk.rstrip() if match.group(1) else chunk))
        out.append(("action", match.group(2)))
        pos, trim_next = match.end(), bool(match.group(3))
    rest = text[pos:]
    out.append(("text", rest.lstrip() if trim_next else rest))
    return out


def _parse(tokens: list[tuple[str, str]], i: int = 0) -> tuple[list, int, str]:
    """A node list up to a closing `end`/`else`; returns (nodes, next index, closer)."""
    nodes: list = []
    while i < len(tokens):
        kind, value = tokens[i]
        i += 1
        if kind == "text" or value.startswith("/*"):
            nodes.append(("text", value if kind == "text" else ""))
        elif value in ("end", "else"):
            return nodes, i, value
        elif value.startswith(("if ", "range ")):
            body, i, closer = _parse(tokens, i)
            other: list = []
            if closer == "else":
                other, i, closer = _parse(tokens, i)
            if closer != "end":
                raise ValueError(f"unclosed {{{{ {value} }}}}")
            nodes.append((value.split()[0], value, body, other))
        else:
            nodes.append(("expr", value))
    return nodes, i, ""


def _lookup(path: str, scope: dict) -> Any:
    if path.startswith("$") and not path.startswith("$."):
        name, _, rest = path[1:].partition(".")
        value = scope["vars"][name]
        parts = rest.split(".") if rest else []
    else:
        value, parts = scope["root"], path.lstrip("$").lstrip(".").split(".")
    for part in parts:
        value = value[part]
    return value


def _apply(value: Any, func: str) -> Any:
    name, *args = func.split()
    if name == "quote":
        return '"' + str("" if value is None else value).replace("\\", "\\\\").replace('"', '\\"') + '"'
    if name == "toYaml":
        return yaml.safe_dump(value, default_flow_style=False, sort_keys=True).rstrip("\n")
    if name in ("indent", "nindent"):
        pad = " " * int(args[0])
        text = "\n".join(pad + line if line else line for line in str(value).rstrip("\n").split("\n"))
        return "\n" + text if name == "nindent" else text
    raise ValueError(f"unsupported template function {name!r}")


def _evaluate(expr: str, scope: dict) -> Any:
    if expr.startswith("fail "):  # Helm stops rendering with this message
        raise ValueError(expr[5:].strip().strip('"'))
    first, *funcs = [part.strip() for part in expr.split("|")]
    value = _lookup(first, scope)
    for func in funcs:
        value = _apply(value, func)
    return value


def _run(nodes: list, scope: dict) -> str:
    out = []
    for node in nodes:
        if node[0] == "text":
            out.append(node[1])
        elif node[0] == "expr":
            value = _evaluate(node[1], scope)
            out.append("" if value is None else str(value).lower() if isinstance(value, bool) else str(value))
        elif node[0] == "if":
            out.append(_run(node[2] if _evaluate(node[1][3:], scope) else node[3], scope))
        else:
            key, val, source = _RANGE.match(node[1]).groups()
            items = sorted((_evaluate(source, scope) or {}).items())
            out.extend(_run(node[2], {**scope, "vars": {**scope["vars"], key: k, val: v}}) for k, v in items)
    return "".join(out)


def render_chart(values: dict | None = None) -> dict[str, str]:
    """Each template's rendered text by file name (templates that render empty are left out)."""
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    root = {"Values": values if values is not None else yaml.safe_load((CHART / "values.yaml").read_text()),
            "Release": RELEASE, "Chart": {"Name": chart["name"], "Version": chart["version"],
                                          "AppVersion": chart["appVersion"]}}
    rendered = {}
    for template in sorted((CHART / "templates").glob("*.yaml")):
        nodes, _i, closer = _parse(_tokens(template.read_text()))
        if closer:
            raise ValueError(f"{template.name}: stray {{{{ {closer} }}}}")
        text = _run(nodes, {"root": root, "vars": {}}).strip("\n")
        if text.strip():
            rendered[template.name] = HEADER + text + "\n"
    return rendered


def write_manifests() -> list[Path]:
    """Rewrite deploy/k8s/ from the chart with its default values."""
    K8S.mkdir(exist_ok=True)
    for stale in K8S.glob("*.yaml"):
        stale.unlink()
    written = []
    for name, text in render_chart().items():
        (K8S / name).write_text(text)
        written.append(K8S / name)
    return written


if __name__ == "__main__":
    for path in write_manifests():
        print(path.relative_to(ROOT))
