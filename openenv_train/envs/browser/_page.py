"""What a step sees of the page: BrowserGym-style bids, the flattened accessibility tree and a pruned HTML.

Bids are stamped on elements in document order (``bid`` attribute; new elements get the next numbers, old
ones keep theirs), so the same seed and actions give the same bids. To map Chromium's accessibility nodes back
to bids, each element's ``aria-description`` briefly carries ``oet-bid-N`` while the tree is read (the trick
BrowserGym uses); it is restored right after.
"""

from __future__ import annotations

from typing import Any

__all__ = ["flatten_axtree", "read_axtree", "pruned_html"]

_PREFIX = "oet-bid-"
_MARK = """
let next = window.__oetNextBid || 0;
for (const el of document.querySelectorAll('*')) {
  if (!el.hasAttribute('bid')) el.setAttribute('bid', String(next++));
  const old = el.getAttribute('aria-description');
  el.__oetDesc = old;
  el.setAttribute('aria-description', 'PREFIX' + el.getAttribute('bid') + (old ? ' ' + old : ''));
}
window.__oetNextBid = next;
""".replace("PREFIX", _PREFIX)
_UNMARK = """
for (const el of document.querySelectorAll('*')) {
  if (el.__oetDesc === null || el.__oetDesc === undefined) el.removeAttribute('aria-description');
  else el.setAttribute('aria-description', el.__oetDesc);
}
"""
#: Roles that only group: printed when they carry a name, else their children move up a level.
_SKIP_ROLES = frozenset({"generic", "none", "InlineTextBox", "LineBreak", "paragraph", "Section", "LayoutTable",
                         "LayoutTableRow", "LayoutTableCell"})
#: Accessibility properties worth a line's suffix, in print order.
_PROPS = ("focused", "checked", "selected", "expanded", "pressed", "disabled", "required", "readonly",
          "invalid", "level", "valuetext", "hasPopup", "autocomplete", "multiselectable")
_TRUE_ONLY = frozenset({"focused", "disabled", "required", "readonly"})


def read_axtree(driver: Any) -> list[dict[str, Any]]:
    """Stamp bids and return Chromium's full accessibility tree (CDP ``Accessibility.getFullAXTree``)."""
    driver.execute_script(_MARK)
    try:
        return list(driver.execute_cdp_cmd("Accessibility.getFullAXTree", {})["nodes"])
    finally:
        driver.execute_script(_UNMARK)


def _value(node: dict[str, Any], key: str) -> Any:
    entry = node.get(key) or {}
    return entry.get("value")


def _line(node: dict[str, Any], role: str, name: str) -> str:
    desc = str(_value(node, "description") or "")
    bid = ""
    if desc.startswith(_PREFIX):
        bid_part, _, desc = desc[len(_PREFIX):].partition(" ")
        bid = f"[{bid_part}] "
    parts = [f"{bid}{role} {name.strip()!r}"]
    value = _value(node, "value")
    if value not in (None, "") and role not in ("StaticText",):
        parts.append(f"value={str(value)!r}")
    props = {p["name"]: (p.get("value") or {}).get("value") for p in node.get("properties", [])}
    for key in _PROPS:
        if key not in props:
            continue
        val = props[key]
        if key in _TRUE_ONLY:
            if val is True:
                parts.append(key)
        elif val not in (None, "", False, "false") or key in ("checked", "expanded", "selected"):
            parts.append(f"{key}={str(val).lower() if isinstance(val, bool) else val!r}")
    if desc:
        parts.append(f"description={desc!r}")
    return ", ".join(parts)


def flatten_axtree(nodes: list[dict[str, Any]]) -> str:
    """BrowserGym's text form of the tree: one ``[bid] role 'name'`` line per node, tab-indented by depth.

    Ignored nodes and unnamed groups are dropped (their children move up), as is a text node that repeats
    its parent's name.
    """
    if not nodes:
        return ""
    by_id = {node["nodeId"]: node for node in nodes}
    lines: list[str] = []

    def visit(node: dict[str, Any], depth: int, parent_name: str, inherited: str = "") -> None:
        role = str(_value(node, "role") or "")
        name = str(_value(node, "name") or "")
        shown = not node.get("ignored") and not (role in _SKIP_ROLES and not name.strip())
        if role == "StaticText" and inherited and not _value(node, "description"):
            node = {**node, "description": {"value": inherited}}  # the bid of the <span> it is the text of
        if role == "InlineTextBox":  # line-wrapping pieces of the StaticText above: no children, no new text
            return
        if role == "StaticText" and (not name.strip() or name.strip() == parent_name.strip()):
            shown = False
        if shown:
            lines.append("\t" * depth + _line(node, role, name))
        children = [by_id[c] for c in node.get("childIds", []) if c in by_id]
        # an unnamed group (a <span> link, a clickable <div>) that holds just one text: the text carries its bid
        desc = str(_value(node, "description") or "")
        passed = desc if not shown and len(children) == 1 and desc.startswith(_PREFIX) else ""
        for child in children:
            visit(child, depth + 1 if shown else depth, name if shown else parent_name, passed)

    visit(nodes[0], 0, "")
    return "\n".join(lines)


_PRUNE = r"""
const KEEP = ['id', 'class', 'type', 'name', 'value', 'placeholder', 'href', 'title', 'for', 'role', 'aria-label'];
const SKIP = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'LINK', 'META', 'CANVAS']);
function esc(s) { return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;'); }
function walk(el) {
  if (SKIP.has(el.tagName)) return '';
  const style = window.getComputedStyle(el);
  if (style.display === 'none' || style.visibility === 'hidden') return '';
  let inner = '';
  for (const child of el.childNodes) {
    if (child.nodeType === 3) {
      const t = child.textContent.replace(/\s+/g, ' ').trim();
      if (t) inner += (inner ? ' ' : '') + esc(t);
    }
    else if (child.nodeType === 1) { const w = walk(child); if (w) inner += (inner ? ' ' : '') + w; }
  }
  const tag = el.tagName.toLowerCase();
  let attrs = el.hasAttribute('bid') ? ` bid="${el.getAttribute('bid')}"` : '';
  for (const a of KEEP) if (el.hasAttribute(a)) attrs += ` ${a}="${esc(el.getAttribute(a))}"`;
  if ((tag === 'input' || tag === 'textarea') && el.value && !el.hasAttribute('value')) attrs += ` value="${esc(el.value)}"`;
  if (el.checked) attrs += ' checked';
  if ((tag === 'div' || tag === 'span') && attrs === ` bid="${el.getAttribute('bid')}"`) return inner;
  return `<${tag}${attrs}>${inner}</${tag}>`;
}
return walk(document.body);
"""


def pruned_html(driver: Any) -> str:
    """The visible body as compact HTML: bids and a few attributes kept, unattributed div/span unwrapped."""
    return str(driver.execute_script(_PRUNE))
