"""Corpora of bench/hf: which transformers the workers import, which rows, which flags.

A corpus names the interpreter its workers run under (so a second transformers version lives in its
own virtual environment), the recipes it takes, the per-model flags it applies on top of the recipes
(config overrides, fp16, sequence length, the eval-mode grad context), where its results go and which
section of docs/benchmarks.md it owns. Standard library only: run.py, report.py and the tests use it
without importing torch or transformers.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@dataclasses.dataclass(frozen=True)
class Corpus:
    name: str
    # interpreter of the workers, relative to the repository root; None: the one running run.py
    python: str | None = None
    # transformers version the corpus is defined for (run.py warns on another); None: any
    transformers: str | None = None
    # recipes taken: all of them, or only those marked paper=True
    paper_only: bool = False
    # results JSON under bench/results and the docs/benchmarks.md section it owns
    results: str = "hf.json"
    census_results: str = "hf-census.json"
    section: str = "hf"
    # text sequence length for the input builders (None: recipes.S and the builders' own lengths)
    seq_len: int | None = None
    # grad context of eval mode: "no_grad" or "inference_mode"
    eval_context: str = "no_grad"
    # models whose weights and floating inputs are cast to torch.float16
    fp16: frozenset = frozenset()
    # model -> config overrides merged over the recipe's
    overrides: dict = dataclasses.field(default_factory=dict)
    # model -> sub-config attribute -> overrides merged over the recipe's sub-config overrides
    sub_overrides: dict = dataclasses.field(default_factory=dict)
    # draw docs/img/hf-breaks.png (the default corpus only)
    chart: bool = False
    # one-line description of the flags, for the report
    flags: str = ""

    def worker_python(self, root: str = ROOT) -> str | None:
        if not self.python:
            return None
        return self.python if os.path.isabs(self.python) else os.path.join(root, self.python)

    def model_names(self, recipes: list) -> list[str]:
        """Recipe names of the corpus, in recipe order (`recipes`: objects with .name and .paper)."""
        return [r.name for r in recipes if r.paper or not self.paper_only]


# The GraphMend paper's Table 2, "before" column: graph breaks per model on transformers 4.52.4 (the
# rows with a number the paper states per model; keys are recipe names). Over its 14 reproducible
# rows the paper reports 65 breaks before and 14 after (78% fixed).
PAPER_TABLE2_BEFORE: dict[str, int] = {
    "t5": 3, "whisper": 3, "bart": 7, "marian": 6, "biogpt": 2, "blenderbot": 3, "pegasus": 2,
    "layoutlmv3": 2, "grounding_dino": 17, "longformer": 5,
}
PAPER_TABLE2_TOTAL = {"rows": 14, "before": 65, "after": 14}
PAPER_TABLE2_TOTAL["fixed_pct"] = round(
    100.0 * (PAPER_TABLE2_TOTAL["before"] - PAPER_TABLE2_TOTAL["after"]) / PAPER_TABLE2_TOTAL["before"], 1)

# phi3 (Phi-4-mini's architecture) with LongRoPE, as the paper runs it. The tiny recipe has head_dim 8
# (hidden 32, 4 heads), so the factor lists have head_dim // 2 = 4 entries. original_max_position_embeddings
# 4 lies below the sequence length 5: the rotary embedding takes the long factors (the branch on
# `torch.max(position_ids) + 1 > original_max_position_embeddings` is live either way). transformers 4.52.4's
# Phi3Config wants exactly the keys type, short_factor and long_factor.
PHI3_LONGROPE = {
    "original_max_position_embeddings": 4,
    "rope_scaling": {"type": "longrope", "short_factor": [1.0, 1.0, 1.0, 1.0],
                     "long_factor": [1.0, 1.5, 2.0, 4.0]},
}

DEFAULT = Corpus(name="default", chart=True,
                 flags="library defaults (fp32, sequence length 16, eval under no_grad)")

PAPER_452 = Corpus(
    name="paper-4.52.4",
    python=".venv-tf452/bin/python",
    transformers="4.52.4",
    paper_only=True,
    results="hf-paper-4.52.4.json",
    census_results="hf-paper-4.52.4-census.json",
    section="hf-paper-4.52.4",
    seq_len=5,
    eval_context="inference_mode",
    fp16=frozenset({"bart", "marian"}),
    overrides={"phi3": PHI3_LONGROPE},
    sub_overrides={"clap": {"audio_config": {"enable_fusion": True}}},
    flags=("the paper's: text sequence length 5 (decoder inputs too), eval() under torch.inference_mode(), "
           "fp16 weights and floating inputs for bart and marian, phi3 with longrope rope_scaling "
           "(original_max_position_embeddings 4 < 5: long factors), clap audio with enable_fusion=True"),
)

CORPORA: dict[str, Corpus] = {c.name: c for c in (DEFAULT, PAPER_452)}


def get(name: str | None) -> Corpus:
    if name is None:
        return DEFAULT
    try:
        return CORPORA[name]
    except KeyError:
        raise ValueError(f"unknown corpus {name!r} (known: {', '.join(CORPORA)})") from None


def merged_overrides(corpus: Corpus, name: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """The recipe's config overrides with the corpus's for model `name` on top."""
    return {**overrides, **corpus.overrides.get(name, {})}


def merged_sub_overrides(corpus: Corpus, name: str, attr: str, overrides: dict[str, Any]) -> dict[str, Any]:
    return {**overrides, **corpus.sub_overrides.get(name, {}).get(attr, {})}


def paper_totals(rows: list[dict]) -> dict:
    """Ours next to the paper's Table 2 from per-row numbers.

    rows: dicts with name, before (int or None when the row did not build) and, where measured,
    after_safe and after_unsafe (int or None). Returns our totals over the rows measured, over the rows
    with a paper number, and the paper's."""
    done = [r for r in rows if r.get("before") is not None]

    def tot(rs, k):
        vals = [r.get(k) for r in rs]
        return sum(vals) if vals and all(v is not None for v in vals) else None

    known = [r for r in done if r["name"] in PAPER_TABLE2_BEFORE]
    return {
        "rows": len(done),
        "before": tot(done, "before"),
        "after_safe": tot(done, "after_safe"),
        "after_unsafe": tot(done, "after_unsafe"),
        "known_rows": len(known),
        "known_before": tot(known, "before"),
        "known_after_safe": tot(known, "after_safe"),
        "known_after_unsafe": tot(known, "after_unsafe"),
        "paper_known_before": sum(PAPER_TABLE2_BEFORE[r["name"]] for r in known),
        "paper": dict(PAPER_TABLE2_TOTAL),
    }
