"""The L1 prior: a learned L1 trained on public crowd ratings, shipped as a small versioned file,
so that screening ranks by something measured before a study has any ratings of its own.

What it is: a ridge regression (`apps.screening.learned.fit_ridge`, embeddings only) of the mean
crowd grade of Humicroedit's edited headlines (Hossain, Krumm & Gamon, NAACL 2019; SemEval-2020
Task 7, subtask 1 training split: 9,652 English headlines, five 0–3 grades each) on their
multilingual Universal Sentence Encoder embeddings, with each headline's unedited original beside
it at grade 0. The originals are the method's "ordinary text of the same topic": news, not a
joke, so not funny (an assumption, not a rating: nobody graded them). Without them the prior
learns only which of many jokes people like more, and scores a plain weather report like a
joke; with them it also learns what separates a joke from ordinary text on the same subject. `manage.py build_l1_prior` builds it from the
CSV the project documents (`shared/reference/humicroedit/task-1_train.csv`); nothing is fetched
at run time, and the file holds only coefficients, never the headlines.

How it was measured: the build keeps a seeded 20% of the headlines (and their originals) out of
training and reports, on the edited ones, the Spearman rho with the crowd means and the share of
the crowd's top quartile that a top-half sieve keeps (95% percentile bootstrap intervals over
items), the RMSE beside the training mean's, and the share of held-out headlines that score
above their own unedited original. The shipped coefficients are exactly the measured model's (the held-out fifth
is never trained on, so the benchmark can also evaluate on it).

Chinese: the encoder maps Chinese and English into one space, so the prior gives Chinese items a
score; there is no rated Chinese humor set here to measure it against, so for Chinese its quality
is unmeasured and every page says so. A study's own ratings refine it (`learned`: the prior's
prediction is an unpenalised column) or replace it where they rank better.

Pure: no Django; the loader reads the packaged file once per process.
"""

from __future__ import annotations

import csv
import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from apps.screening import learned

PRIOR_VERSION = "humicroedit-en-v1"
PRIOR_PATH = Path(__file__).resolve().parent / "priors" / f"{PRIOR_VERSION}.json"
HOLDOUT_SHARE = 0.2
_EDIT = re.compile(r"<[^<>]*/>")


@dataclass(frozen=True)
class HeadlineRow:
    id: str
    text: str
    mean_grade: float
    original: str = ""


def read_humicroedit(path: Path | str) -> list[HeadlineRow]:
    """The edited headlines of a Humicroedit CSV (`id,original,edit,grades,meanGrade`) with their
    mean grade: `original` with its `<word/>` span replaced by `edit`."""
    rows: list[HeadlineRow] = []
    with open(path, encoding="utf-8", newline="") as handle:
        for number, record in enumerate(csv.DictReader(handle), start=2):
            original, edit = record.get("original") or "", record.get("edit") or ""
            if not _EDIT.search(original):
                raise ValueError(f"line {number}, field original: no <word/> span to replace")
            try:
                mean = float(record["meanGrade"])
            except (KeyError, ValueError):
                raise ValueError(f"line {number}, field meanGrade: not a number") from None
            text = _EDIT.sub(lambda _match, edit=edit: edit, original, count=1)
            plain = _EDIT.sub(lambda match: match.group(0)[1:-2], original, count=1)
            rows.append(
                HeadlineRow(
                    id=str(record.get("id", "")),
                    text=" ".join(text.split()),
                    mean_grade=mean,
                    original=" ".join(plain.split()),
                )
            )
    return rows


def holdout_mask(n: int, *, seed: int, share: float = HOLDOUT_SHARE) -> NDArray[np.bool_]:
    """Which of n rows the build keeps out of training (seeded; the benchmark uses the same)."""
    order = np.random.default_rng(seed).permutation(n)
    mask = np.zeros(n, dtype=bool)
    mask[order[: round(share * n)]] = True
    return mask


@dataclass(frozen=True)
class Prior:
    version: str
    embedding_model: str  # the encoder's name (without its package version)
    trained_on: str
    n_train: int
    n_holdout: int
    seed: int
    # Measured on the held-out headlines: {"rho": {...}, "top_quartile_kept": {...}, "rmse",
    # "rmse_mean_baseline", "language": "en"}.
    quality: dict[str, Any]
    measured_languages: tuple[str, ...]
    model: learned.RidgeModel

    def predict(self, embeddings: NDArray[np.float64]) -> NDArray[np.float64]:
        return self.model.predict(np.zeros((len(embeddings), 0)), embeddings)

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "embedding_model": self.embedding_model,
            "trained_on": self.trained_on,
            "n_train": self.n_train,
            "n_holdout": self.n_holdout,
            "seed": self.seed,
            "quality": self.quality,
            "measured_languages": list(self.measured_languages),
            "model": self.model.to_json(),
        }


def build_prior(
    rows: Sequence[HeadlineRow],
    embeddings: NDArray[np.float64],
    original_embeddings: NDArray[np.float64],
    *,
    embedding_model: str,
    seed: int,
    rounds: int = learned.DEFAULT_BOOTSTRAP,
) -> Prior:
    """Fit the prior on all but a seeded held-out fifth (edited headlines at their mean grade,
    their originals at 0), and measure it on the held-out fifth."""
    y = np.array([row.mean_grade for row in rows], dtype=np.float64)
    hold = holdout_mask(len(rows), seed=seed)
    train = ~hold
    n_train = int(train.sum())
    x = np.vstack([embeddings[train], original_embeddings[train]])
    target = np.concatenate([y[train], np.zeros(n_train)])
    model = learned.fit_ridge(np.zeros((len(target), 0)), x, target, names=())
    predicted = model.predict(np.zeros((int(hold.sum()), 0)), embeddings[hold])
    ordinary = model.predict(np.zeros((int(hold.sum()), 0)), original_embeddings[hold])
    rho, kept = learned.bootstrap_figures(predicted, y[hold], seed=seed, rounds=rounds)
    quality = {
        "language": "en",
        "rho": rho.to_json(),
        "top_quartile_kept": kept.to_json(),
        "rmse": learned.rmse(predicted, y[hold]),
        "rmse_mean_baseline": learned.rmse(np.full(int(hold.sum()), y[train].mean()), y[hold]),
        # The share of held-out headlines scored above their own unedited original.
        "above_original": float(np.mean(predicted > ordinary)),
        "scale": "Humicroedit mean grade, 0-3",
    }
    return Prior(
        version=PRIOR_VERSION,
        embedding_model=embedding_model,
        trained_on=(
            "Humicroedit (Hossain, Krumm & Gamon, NAACL 2019; SemEval-2020 Task 7 subtask 1 "
            f"training split): {n_train} English edited news headlines with five 0-3 crowd "
            "grades each, and their unedited originals at grade 0"
        ),
        n_train=n_train,
        n_holdout=int(hold.sum()),
        seed=seed,
        quality=quality,
        measured_languages=("en",),
        model=model,
    )


def prior_from_json(data: dict[str, Any]) -> Prior:
    return Prior(
        version=str(data["version"]),
        embedding_model=str(data["embedding_model"]),
        trained_on=str(data["trained_on"]),
        n_train=int(data["n_train"]),
        n_holdout=int(data["n_holdout"]),
        seed=int(data["seed"]),
        quality=dict(data["quality"]),
        measured_languages=tuple(data.get("measured_languages", ())),
        model=learned.RidgeModel.from_json(data["model"]),
    )


@functools.cache
def _load(path: str) -> Prior | None:
    file = Path(path)
    if not file.is_file():
        return None
    return prior_from_json(json.loads(file.read_text(encoding="utf-8")))


def packaged_prior(path: Path | str | None = None) -> Prior | None:
    """The shipped prior (None when its file is missing), read once per process."""
    return _load(str(path or PRIOR_PATH))


def write_prior(prior: Prior, path: Path | str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(prior.to_json(), ensure_ascii=False, indent=1, allow_nan=False)
    Path(path).write_text(text + "\n", encoding="utf-8")
