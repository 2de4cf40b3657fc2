"""The review sheet of a filter run: what a person needs to accept or reject each shortlisted item.

Written under ``OUT/review/``:

- ``index.html``: one card per shortlisted candidate (decision ``kept``), ordered by confusion then
  rank, showing the original (linked at full resolution) and the centre crop the model saw, the
  weak label (wnid, name, WordNet gloss, exemplars when given), each model's centre-crop top-5 and
  its probability of the weak label on every crop, the confusion key and rank, source / URL /
  licence metadata and near-duplicate hits; a decision menu per card (:data:`REVIEW_CODES`) and
  a button that saves the decisions as ``reviews.jsonl`` (key, decision, reviewer, time, note),
  the file ``package-a`` / ``package-o`` take as ``--accepted``;
- ``sheet-NNN.png``: the same items as contact sheets (10 rows a page), for a quick look offline.
"""
from __future__ import annotations

import html
import io
import os
from typing import Mapping, Sequence

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from schemas.adversarial import KEPT, NEAR_DUPLICATE_BITS, REVIEW_CODES, REVIEW_DIR, REVIEW_PAGE, TASKS
from schemas.class_names import class_gloss, class_lemmas, class_name
from schemas.wnids import wnid_to_label
from transforms.ten_crop import CENTRE_CROP

from pipelines.formats import storage

__all__ = ["ROWS_PER_SHEET", "THUMB", "TEXT_WIDTH", "FONT_SIZE", "HEADER", "shortlist", "DuplicateIndex",
           "item_lines", "contact_sheets", "write_review_sheet"]

ROWS_PER_SHEET = 10
THUMB = 224
TEXT_WIDTH = 900
FONT_SIZE = 14
HEADER = 24


def _name(wnid: str) -> str:
    return class_name(wnid) if wnid in wnid_to_label() else wnid


def shortlist(decisions: Sequence[Mapping]) -> list:
    """The kept rows, ordered by confusion key then rank."""
    return sorted((r for r in decisions if r["decision"] == KEPT), key=lambda r: (r["confusion"], r["rank"], r["key"]))


class DuplicateIndex:
    """Identical-bytes and dHash neighbours of any candidate among all decodable candidates.

    One vectorised pass over the pool per query, so the sheet of a shortlist of s items over a
    pool of n candidates costs O(s n) bit operations in NumPy.
    """

    def __init__(self, decisions: Sequence[Mapping]):
        pool = [r for r in decisions if "dhash" in r]
        self._keys = [r["key"] for r in pool]
        self._sha = [r["sha256"] for r in pool]
        self._hashes = np.array([int(r["dhash"], 16) for r in pool], dtype=np.uint64)

    def hits(self, row: Mapping) -> list:
        """``[(other key, 'identical bytes' | 'dHash distance d')]``, in key order."""
        if "dhash" not in row or not self._keys:
            return []
        xor = self._hashes ^ np.uint64(int(row["dhash"], 16))
        distances = np.unpackbits(xor.view(np.uint8).reshape(-1, 8), axis=1).sum(axis=1)
        found = []
        for i in np.flatnonzero(distances <= NEAR_DUPLICATE_BITS):
            if self._keys[i] != row["key"]:
                why = "identical bytes" if self._sha[i] == row["sha256"] else f"dHash distance {distances[i]}"
                found.append((self._keys[i], why))
        return sorted(found)  # identical bytes have identical hashes, so they are all found here


def item_lines(row: Mapping, duplicates: DuplicateIndex, task: str) -> list:
    """The facts of one item as text lines (used by the contact sheet; the page shows the same)."""
    weak = row["wnid"]
    lines = [row["key"]]
    if TASKS[task].weak_labels:
        lines.append(f"weak label: {weak} {class_lemmas(weak)}")
        lines.append(f"  {class_gloss(weak)}")
    else:
        lines.append(f"source synset: {weak}; filed under the prediction {row['confusion'][0]} "
                     f"{_name(row['confusion'][0])}")
    label = " -> ".join(_name(w) for w in row["confusion"])
    lines.append(f"confusion: {label}   rank {row['rank']} of {row['confusion_size']}")
    for model in row["models"]:
        top5 = ", ".join(f"{_name(w)} {p:.3f}" for w, p in model["top5"][CENTRE_CROP])
        lines.append(f"{model['model']} centre top-5: {top5}")
        if "weak_prob" in model:
            lines.append(f"  P(weak) per crop: " + " ".join(f"{p:.4f}" for p in model["weak_prob"]))
        else:
            lines.append(f"  MSP per crop: " + " ".join(f"{p:.3f}" for p in model["msp"]))
    meta = row.get("metadata") or {}
    lines.append("source: " + (", ".join(f"{k}={v}" for k, v in sorted(meta.items())) or "no metadata given"))
    dups = duplicates.hits(row)
    lines.append("near-duplicates: " + (", ".join(f"{k} ({why})" for k, why in dups) or "none"))
    return lines


def _fit(image: Image.Image, size: int) -> Image.Image:
    image = image.convert("RGB")
    image.thumbnail((size, size), Image.BILINEAR)
    return image


def contact_sheets(output_dir: str, items: Sequence[Mapping], duplicates: DuplicateIndex, task: str) -> list:
    """Write ``review/sheet-NNN.png`` pages; return their relative paths."""
    font = ImageFont.load_default(size=FONT_SIZE)
    pages = []
    row_height = THUMB + 8
    for start in range(0, len(items), ROWS_PER_SHEET):
        chunk = items[start:start + ROWS_PER_SHEET]
        sheet = Image.new("RGB", (2 * THUMB + TEXT_WIDTH + 16, HEADER + len(chunk) * row_height + 4), "white")
        draw = ImageDraw.Draw(sheet)
        for left, title in ((4, "original"), (THUMB + 8, "centre crop the model saw"), (2 * THUMB + 14, "item")):
            draw.text((left, 4), title, fill="black", font=font)
        for i, row in enumerate(chunk):
            top = HEADER + i * row_height
            original = Image.open(io.BytesIO(storage.read_bytes(os.path.join(output_dir, REVIEW_DIR, "originals", row["key"]))))
            sheet.paste(_fit(original, THUMB), (4, top))
            crop = Image.open(os.path.join(output_dir, REVIEW_DIR, "crops", row["key"] + ".png"))
            sheet.paste(crop.resize((THUMB, THUMB), Image.BILINEAR) if crop.size != (THUMB, THUMB) else crop,
                        (THUMB + 8, top))
            lines = item_lines(row, duplicates, task)
            lines[0] = f"#{start + i + 1}  {lines[0]}"
            draw.multiline_text((2 * THUMB + 14, top), "\n".join(_clip(l) for l in lines), fill="black",
                                font=font, spacing=2)
        relative = f"{REVIEW_DIR}/sheet-{start // ROWS_PER_SHEET + 1:03d}.png"
        buffer = io.BytesIO()
        sheet.save(buffer, format="PNG")
        storage.write_atomic(output_dir, relative, buffer.getvalue())
        pages.append(relative)
    return pages


def _clip(line: str, width: int = 125) -> str:
    return line if len(line) <= width else line[:width - 1] + "…"


_SCRIPT = """
function save() {
  const reviewer = document.getElementById('reviewer').value.trim();
  if (!reviewer) { alert('Enter your reviewer id first.'); return; }
  const time = new Date().toISOString();
  const lines = [];
  for (const card of document.querySelectorAll('.item')) {
    const decision = card.querySelector('select').value;
    if (!decision) continue;
    lines.push(JSON.stringify({key: card.dataset.key, decision: decision, reviewer: reviewer, time: time,
                               note: card.querySelector('input.note').value}));
  }
  const blob = new Blob([lines.join('\\n') + (lines.length ? '\\n' : '')], {type: 'application/jsonl'});
  const link = document.createElement('a');
  link.href = URL.createObjectURL(blob); link.download = 'reviews.jsonl'; link.click();
}
"""

_STYLE = """
body{font-family:sans-serif;margin:1em;max-width:1400px}
.item{border:1px solid #999;margin:1em 0;padding:.5em;display:flex;gap:1em} .item>div{flex-shrink:0}
.item img{max-height:300px} .crop{width:224px;height:224px} table{border-collapse:collapse;font-size:90%}
td,th{border:1px solid #ccc;padding:2px 4px;text-align:left} .item>div.facts{flex:1;flex-shrink:1} .gloss{color:#555}
"""


_CROP_HEADERS = ("TL", "TR", "BL", "BR", "centre", "flip TL", "flip TR", "flip BL", "flip BR", "flip centre")
"""Column heads of the per-crop table, in crop-index order (:data:`transforms.ten_crop.CROP_NAMES`)."""


def _e(value) -> str:
    return html.escape(str(value), quote=True)


def _card(number: int, row: Mapping, duplicates: DuplicateIndex, task: str, exemplars: Sequence[str]) -> str:
    weak_labels = TASKS[task].weak_labels
    key = row["key"]
    parts = [f'<div class="item" data-key="{_e(key)}" id="item-{number}">',
             f'<div><a href="originals/{_e(key)}"><img src="originals/{_e(key)}" alt="original" loading="lazy"></a>'
             f'<br><small>original {row.get("upright_width")}x{row.get("upright_height")} {row.get("format")}, '
             f'{row["bytes"]} bytes</small></div>',
             f'<div><img class="crop" src="crops/{_e(key)}.png" alt="centre crop" loading="lazy"><br><small>centre crop the model saw'
             f'</small></div><div class="facts"><h3>#{number} {_e(key)}</h3>']
    if weak_labels:
        weak = row["wnid"]
        parts.append(f'<p><b>weak label</b> {weak} <b>{_e(class_lemmas(weak))}</b><br>'
                     f'<span class="gloss">{_e(class_gloss(weak))}</span></p>')
    else:
        predicted = row["confusion"][0]
        parts.append(f'<p><b>source synset</b> {_e(row["wnid"])}; <b>filed under</b> {predicted} '
                     f'{_e(class_lemmas(predicted))}<br><span class="gloss">{_e(class_gloss(predicted))}</span><br>'
                     f'It must show <b>none</b> of the 1000 ImageNet classes.</p>')
    if exemplars:
        parts.append("<p><b>training exemplars</b><br>" + "".join(f'<img src="{_e(x)}" style="max-height:96px" alt="exemplar">'
                                     for x in exemplars) + "</p>")
    label = " &rarr; ".join(_e(_name(w)) for w in row["confusion"])
    parts.append(f'<p><b>confusion</b> {label}: rank {row["rank"]} of {row["confusion_size"]}'
                 + (f'; score (min MSP) {row["score"]:.4f}' if "score" in row else "") + "</p>")
    for model in row["models"]:
        top5 = "".join(f"<tr><td>{_e(_name(w))}</td><td>{p:.4f}</td></tr>" for w, p in model["top5"][CENTRE_CROP])
        per_crop = model.get("weak_prob", model["msp"])
        head = "P(weak label)" if "weak_prob" in model else "MSP"
        crops = "".join(f"<td>{p:.4f}</td>" for p in per_crop)
        argmax = "".join(f"<td>{_e(_name(w))}</td>" for w in model["argmax"])
        parts.append(f'<p><b>{_e(model["model"])}</b></p><table><tr><th>centre top-5</th><th>p</th></tr>{top5}'
                     f'</table><table><tr><th>crop</th>{"".join(f"<th>{c}</th>" for c in _CROP_HEADERS)}</tr>'
                     f'<tr><th>prediction</th>{argmax}</tr><tr><th>{head}</th>{crops}</tr></table>')
    meta = row.get("metadata") or {}
    parts.append("<p><b>source</b> " + (", ".join(f"{_e(k)}: {_e(v)}" for k, v in sorted(meta.items()))
                                       or "no metadata given") + "</p>")
    dups = duplicates.hits(row)
    parts.append("<p><b>near-duplicates</b> " + (", ".join(f"{_e(k)} ({_e(why)})" for k, why in dups) or "none")
                 + "</p>")
    codes = [c for c in REVIEW_CODES if task == "imagenet_o" or c != "reject:depicts_in1k_class"]
    options = '<option value="">(undecided)</option>' + "".join(f'<option>{c}</option>' for c in codes)
    parts.append(f'<p><b>decision</b> <select>{options}</select> note <input class="note" size="40"></p>'
                 "</div></div>")
    return "".join(parts)


def write_review_sheet(output_dir: str, task: str, decisions: Sequence[Mapping], document: Mapping,
                       exemplars: Mapping[str, Sequence[str]] = None) -> dict:
    """Write ``review/index.html`` and the contact sheets of the shortlist.

    Parameters
    ----------
    decisions : sequence of mapping
        All rows of ``decisions.jsonl``.
    document : mapping
        The run's ``filter.json`` content (config, models, counts), shown in the header.
    exemplars : mapping, optional
        wnid -> paths (relative to ``review/``) of ImageNet train images of that class.

    Returns
    -------
    dict
        ``{"page": ..., "sheets": [...], "items": n}`` (relative paths).
    """
    items = shortlist(decisions)
    duplicates = DuplicateIndex(decisions)
    exemplars = exemplars or {}
    config = document["config"]
    models = ", ".join(f"{m['model']} (ONNX sha256 {m['onnx_sha256'][:12]}…)" for m in document["models"])
    counts = document["counts"]
    header = (f"<h1>{_e(TASKS[task].dataset_title)} review: {len(items)} shortlisted of {counts['decisions']} "
              f"candidates</h1><p>models: {_e(models)}; class set {_e(config['classes'])}; R2 threshold "
              f"{config['threshold']}; cap {config['cap']} per confusion; {counts['rejected']} rejected, "
              f"{counts['capped']} capped, {counts['failures']} unusable files (failures.jsonl).</p>"
              "<p>Accept an item only if it is valid (the label is right), shows a single object of the class and "
              "is of good quality" + ("; for ImageNet-O, only if it shows none of the 1000 ImageNet classes" if
                                      task == "imagenet_o" else "") +
              ". Enter your reviewer id, decide, then save: the saved <code>reviews.jsonl</code> goes to "
              f"<code>imagenet-cp package-{task[-1]} --accepted</code>.</p>"
              '<p>reviewer id <input id="reviewer" size="20"> <button onclick="save()">save reviews.jsonl</button></p>')
    column = 0 if TASKS[task].weak_labels else -1
    cards = "".join(_card(i + 1, row, duplicates, task, exemplars.get(row["confusion"][column], ()))
                    for i, row in enumerate(items))
    page = (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{_e(TASKS[task].dataset_title)} review'
            f'</title><style>{_STYLE}</style><script>{_SCRIPT}</script></head><body>{header}{cards}</body></html>\n')
    storage.write_atomic(output_dir, REVIEW_PAGE, page.encode("utf-8"))
    sheets = contact_sheets(output_dir, items, duplicates, task)
    return {"page": REVIEW_PAGE, "sheets": sheets, "items": len(items)}
