"""The model comparison: which model is funnier, by how much, how sure (DESIGN.md, `models`).

Estimand: each source's (model's, or the human-written items') mean over *its jokes in general,
rated by raters in general*. Items and raters are both random, so every interval here uses the
crossed-design variance of ``crossed.py`` (observations that share an item or a rater are
correlated) with t intervals; no resampling, so the figures cost a few sparse sums per view.

Per view (overall, per level, per humor type, per language), per source:

- ``questions``: the mean of every scorecard answer (for a 0/1 question such as the offense
  flag this is the share of raters' answers), items and raters random;
- ``fixed_items``: the same mean with the items held fixed (raters random): "these jokes";
- ``adjusted``: the mean with each rater's leniency removed. Leniency comes from one additive
  fit per question over the whole study, answer = item effect + rater effect (least squares,
  rater effects weighted to mean 0 over the answers); the adjusted mean is the mean of
  answer - rater effect over the source's answers, a linear function of all answers whose
  influence values (through the fitted rater effects) enter the same crossed variance;
- ``bt``: a model-level Bradley-Terry strength. Competitors are the sources; every judgment
  between items of two different sources is a win of one source over the other; the items'
  own strengths are not in the point estimate but are random in its interval (items and raters
  random). Centred to mean 0 over the view's sources;
- ``judged_human``: the share of Turing judgments on the source's items that said "a person";
- ``offense``: both of the method's readings: ``any_rater`` (share of the source's rated items
  flagged by at least one rater; items random, Wilson interval) and ``share_of_raters`` (the
  offense question's mean: share of answers that flagged it; items and raters random);
- ``rank``: simultaneous rank intervals (Klein, Wright & Wieczorek 2020, Bonferroni over all
  pairs): source j is above i only when the Bonferroni-adjusted interval of their difference
  excludes 0, so all rank intervals hold together with probability >= 95%.

``differences``: every pair of sources on every question, on ``bt`` (with ``p_a_beats_b``, the
probability that a random joke of A beats a random joke of B judged by a random rater: the share
of A-B judgments A won, items and raters random, or the BT-implied probability when the two
never met) and on ``judged_human``; ``p_value`` from the t statistic and ``p_holm`` adjusted by
Holm within the view's family of one question; ``simultaneous``, the family's Bonferroni t
intervals (on ``p_a_beats_b`` too), which hold for all its differences together.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations
from typing import Any

import numpy as np
from scipy import sparse
from scipy.special import expit, stdtrit

from apps.analysis.stats.bootstrap import _wilson
from apps.analysis.stats.bradley_terry import bt_fit
from apps.analysis.stats.crossed import CrossedDesign, holm, t_interval
from apps.analysis.stats.ends import one_sided_bounds
from apps.analysis.stats.inputs import StudyInputs

ESTIMAND = "items_and_raters"
# Leniency needs one rater-by-rater solve per question: beyond this many raters it is skipped.
MAX_RATERS_FOR_LENIENCY = 4000


def _num(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _interval(value: float, low: float, high: float, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"value": _num(value), "ci_low": _num(low), "ci_high": _num(high)}
    for key, entry in extra.items():
        out[key] = _num(entry) if isinstance(entry, float) else entry
    if out["value"] is None:
        out["ci_low"] = out["ci_high"] = None
    return out


class _Block:
    """Observations of one kind (answers to one question, pairs, Turing judgments) with the
    crossed design built once: every view's statistics reuse it."""

    def __init__(self, units: Sequence[np.ndarray], items: Sequence[np.ndarray], rater: np.ndarray):
        kinds = ["item"] * len(items) + ["rater"]
        self.crossed = CrossedDesign.build(units, kinds)
        item_cols = [np.asarray(col) for col in items]
        self.items_only = CrossedDesign.build(item_cols, ["item"] * len(items))
        self.raters_only = CrossedDesign.build([rater])
        self.item_cols = item_cols
        self.rater = np.asarray(rater)
        self.n_items = max((int(col.max()) + 1 for col in item_cols if col.size), default=0)
        self.n_raters = int(self.rater.max()) + 1 if self.rater.size else 0

    def covariances(
        self, psi: np.ndarray, leverage: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return (
            self.crossed.covariance(psi, leverage=leverage),
            self.items_only.covariance(psi, leverage=leverage),
            self.raters_only.covariance(psi, leverage=leverage),
        )

    def deletion_covariances(
        self, scores: np.ndarray, hessians: np.ndarray, information: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return (
            self.crossed.deletion_covariance(scores, hessians, information),
            self.items_only.deletion_covariance(scores, hessians, information),
            self.raters_only.deletion_covariance(scores, hessians, information),
        )

    def df(self, mask: np.ndarray) -> int:
        items = np.zeros(self.n_items, dtype=bool)
        for col in self.item_cols:
            items[col[mask]] = True
        raters = np.zeros(self.n_raters, dtype=bool)
        raters[self.rater[mask]] = True
        return int(min(items.sum(), raters.sum())) - 1


def _contrast_variance(covs: tuple[np.ndarray, ...], c: np.ndarray) -> float:
    """Crossed variance of a contrast, truncated below at its one-way (items, raters) parts:
    V_items + V_raters - V_cells falls below either only by noise (a negative variance
    component), and the truncation is the usual fix (Cameron, Gelbach & Miller 2011)."""
    crossed, items_only, raters_only = (float(c @ cov @ c) for cov in covs)
    return max(crossed, items_only, raters_only, 0.0)


class _Leniency:
    """Additive fit answer = item effect + rater effect for one question (least squares)."""

    def __init__(
        self, item: np.ndarray, rater: np.ndarray, y: np.ndarray, n_items: int, n_raters: int
    ):
        self.item, self.rater, self.y = item, rater, y
        self.n_items, self.n_raters = n_items, n_raters
        incidence = sparse.csr_matrix((np.ones(y.size), (item, rater)), shape=(n_items, n_raters))
        self.incidence = incidence
        self.n_i = np.asarray(incidence.sum(axis=1)).ravel()
        self.m_r = np.asarray(incidence.sum(axis=0)).ravel()
        inv_n = sparse.diags(np.where(self.n_i > 0, 1.0 / np.maximum(self.n_i, 1), 0.0))
        lap = sparse.diags(self.m_r) - incidence.T @ inv_n @ incidence
        values, vectors = np.linalg.eigh(np.asarray(lap.todense()))
        keep = values > 1e-9 * max(float(values.max()) if values.size else 0.0, 1.0)
        self.vectors = vectors[:, keep]
        self.inv_values = 1.0 / values[keep]
        y_r = np.bincount(rater, weights=y, minlength=n_raters)
        y_i = np.bincount(item, weights=y, minlength=n_items)
        raw = self._solve(
            y_r - incidence.T @ (y_i * np.where(self.n_i > 0, 1.0 / np.maximum(self.n_i, 1), 0.0))
        )
        self.effect = raw - float(self.m_r @ raw) / y.size

    def _solve(self, rhs: np.ndarray) -> np.ndarray:
        return np.asarray(self.vectors @ (self.inv_values * (self.vectors.T @ rhs)))

    def weights(self, selected: np.ndarray) -> np.ndarray:
        """w with sum(w * y) = mean over the selected answers of (answer - rater effect)."""
        n_sel = int(selected.sum())
        counts = np.bincount(self.rater[selected], minlength=self.n_raters).astype(float)
        centred = counts - self.m_r * counts.sum() / self.y.size
        g = self._solve(centred)
        h = (self.incidence @ g) * np.where(self.n_i > 0, 1.0 / np.maximum(self.n_i, 1), 0.0)
        return (selected.astype(float) - g[self.rater] + h[self.item]) / n_sel


def _bounded(
    value: float, low: float, high: float, n_eff: int, level: float
) -> tuple[float, float]:
    """A proportion's t interval kept within [0, 1]; Wilson when every outcome agreed (the
    crossed variance is then 0 and would claim certainty)."""
    if value in (0.0, 1.0) and n_eff > 0:
        return _wilson(value * n_eff, float(n_eff), level)
    return max(0.0, low), min(1.0, high)


def _views(inputs: StudyInputs) -> list[tuple[str, str, np.ndarray]]:
    views: list[tuple[str, str, np.ndarray]] = [("overall", "", np.ones(inputs.n_items, bool))]
    dims = [("by_level", inputs.item_level), ("by_humor_type", inputs.item_humor_type)]
    if inputs.item_language and any(inputs.item_language):
        dims.append(("by_language", inputs.item_language))
    for dimension, labels in dims:
        array = np.array(labels, dtype=object)
        for name in sorted(set(labels)):
            views.append((dimension, name, array == name))
    return views


def _source_order(names: Sequence[str]) -> list[str]:
    return sorted(set(names), key=lambda s: (s == "human", s))


class _Comparison:
    def __init__(self, inputs: StudyInputs, level: float):
        self.inputs, self.level = inputs, level
        n_items = inputs.n_items
        self.source = np.array(inputs.item_source, dtype=object)
        # Integer source codes: comparisons of object arrays cost ~10x more on 100k rows.
        self.all_sources = _source_order(inputs.item_source)
        code_of = {name: k for k, name in enumerate(self.all_sources)}
        self.code = np.array([code_of[s] for s in inputs.item_source], dtype=np.int64)
        self.questions = []
        for q, question in enumerate(inputs.questions):
            if question.kind == "choice":
                continue  # an option's index has no mean: the choices are compared as shares
            rows = np.flatnonzero((inputs.score_question == q) & ~np.isnan(inputs.score_value))
            item, rater = inputs.score_item[rows], inputs.score_rater[rows]
            y = inputs.score_value[rows]
            block = _Block([item, n_items + rater], [item], rater) if rows.size else None
            leniency = None
            if rows.size and np.unique(rater).size <= MAX_RATERS_FOR_LENIENCY:
                leniency = _Leniency(item, rater, y, n_items, inputs.n_raters)
            binary = question.kind == "binary" or (
                question.kind != "slider" and question.max_value - question.min_value == 1
            )
            self.questions.append((question.name, item, rater, y, block, leniency, binary))
        # Pair judgments between items of different sources.
        left, right = inputs.pair_left, inputs.pair_right
        cross = self.code[left] != self.code[right] if left.size else np.zeros(0, bool)
        self.pair_rows = np.flatnonzero(cross)
        pl, pr = left[self.pair_rows], right[self.pair_rows]
        self.pair_left, self.pair_right = pl, pr
        self.pair_left_won = inputs.pair_winner_is_left[self.pair_rows]
        self.pair_rater = inputs.pair_rater[self.pair_rows]
        self.pair_block = (
            _Block([pl, pr, n_items + self.pair_rater], [pl, pr], self.pair_rater)
            if pl.size
            else None
        )
        ti, tr = inputs.turing_item, inputs.turing_rater
        self.turing_block = _Block([ti, n_items + tr], [ti], tr) if ti.size else None
        self.offense_name = inputs.offense_question

    # --------------------------------------------------------------------------------------
    def view(self, mask: np.ndarray) -> dict[str, Any] | None:
        inputs = self.inputs
        sources = _source_order(self.source[mask].tolist())
        if not sources:
            return None
        {name: k for k, name in enumerate(sources)}
        n_src = len(sources)
        by_model: dict[str, Any] = {
            name: {
                "n_items": 0,
                "n_raters": 0,
                "questions": {},
                "fixed_items": {},
                "adjusted": {},
            }
            for name in sources
        }
        rated_items = np.zeros(inputs.n_items, dtype=bool)
        raters_of: dict[str, set[int]] = {name: set() for name in sources}
        differences: list[dict[str, Any]] = []
        primary_means: dict[str, tuple[np.ndarray, tuple[np.ndarray, ...], int]] = {}
        codes = [self.all_sources.index(src) for src in sources]
        for name, item, rater, y, block, leniency, binary in self.questions:
            in_view = mask[item]
            rated_items[item[in_view]] = True
            code_of_row = self.code[item]
            psi = np.zeros((y.size, n_src))
            leverage = np.zeros((y.size, n_src))
            estimates = np.full(n_src, np.nan)
            selections = []
            for s, src in enumerate(sources):
                sel = in_view & (code_of_row == codes[s])
                selections.append(sel)
                raters_of[src].update(np.flatnonzero(np.bincount(rater[sel])).tolist())
                if sel.any():
                    estimates[s] = float(y[sel].mean())
                    psi[sel, s] = (y[sel] - estimates[s]) / sel.sum()
                    leverage[sel, s] = 1.0 / sel.sum()
            if block is None:
                continue
            adjusted = np.full(n_src, np.nan)
            psi_adj = None
            leverage_adj = np.zeros((y.size, n_src))
            if leniency is not None:
                # Deviations from each source's mean (within and outside the view) carry the
                # items' and raters' random effects into the variance.
                key = code_of_row * 2 + in_view
                sums = np.bincount(key, weights=y)
                counts = np.maximum(np.bincount(key), 1)
                residual = y - (sums / counts)[key]
                psi_adj = np.zeros((y.size, n_src))
                for s in range(n_src):
                    sel = selections[s]
                    if sel.any():
                        w = leniency.weights(sel)
                        adjusted[s] = float(w @ y)
                        psi_adj[:, s] = w * residual
                        # The adjusted mean's weights as its leverage (nearly 1 / N on the
                        # source's own answers, small elsewhere).
                        leverage_adj[:, s] = np.abs(w) / np.abs(w).sum()
            # One pass over the design for the raw and the adjusted means together.
            both = (
                block.covariances(psi, leverage)
                if psi_adj is None
                else block.covariances(
                    np.hstack([psi, psi_adj]), np.hstack([leverage, leverage_adj])
                )
            )
            covs = tuple(c[:n_src, :n_src] for c in both)
            adj_covs = None if psi_adj is None else tuple(c[n_src:, n_src:] for c in both)
            for s, src in enumerate(sources):
                sel = selections[s]
                if not sel.any():
                    continue
                unit = np.eye(n_src)[s]
                df = block.df(sel)
                var = _contrast_variance(covs, unit)
                low, high, _ = t_interval(estimates[s], var, df, self.level)
                n_items_s = int(np.count_nonzero(np.bincount(item[sel])))
                n_raters_s = int(np.count_nonzero(np.bincount(rater[sel])))
                if binary:
                    low, high = _bounded(
                        estimates[s], low, high, min(n_items_s, n_raters_s), self.level
                    )
                by_model[src]["questions"][name] = _interval(
                    estimates[s], low, high, n=int(sel.sum()), se=math.sqrt(var), df=df
                )
                var_fixed = max(float(covs[2][s, s]), 0.0)
                df_fixed = n_raters_s - 1
                low_f, high_f, _ = t_interval(estimates[s], var_fixed, df_fixed, self.level)
                if binary:
                    low_f, high_f = _bounded(estimates[s], low_f, high_f, n_raters_s, self.level)
                by_model[src]["fixed_items"][name] = _interval(
                    estimates[s],
                    low_f,
                    high_f,
                    n=int(sel.sum()),
                    se=math.sqrt(var_fixed),
                    df=df_fixed,
                )
            if adj_covs is not None:
                for s, src in enumerate(sources):
                    sel = selections[s]
                    if not sel.any():
                        continue
                    var = _contrast_variance(adj_covs, np.eye(n_src)[s])
                    df = block.df(sel)
                    low, high, _ = t_interval(adjusted[s], var, df, self.level)
                    by_model[src]["adjusted"][name] = _interval(
                        adjusted[s], low, high, se=math.sqrt(var), df=df
                    )
            rows_out = []
            for a, b in combinations(range(n_src), 2):
                if not (selections[a].any() and selections[b].any()):
                    continue
                c = np.zeros(n_src)
                c[a], c[b] = 1.0, -1.0
                diff = estimates[a] - estimates[b]
                var = _contrast_variance(covs, c)
                df = block.df(selections[a] | selections[b])
                low, high, p = t_interval(diff, var, df, self.level)
                row: dict[str, Any] = {
                    "a": sources[a],
                    "b": sources[b],
                    "question": name,
                    **_interval(diff, low, high, se=math.sqrt(var), df=df, p_value=p),
                }
                if adj_covs is not None and np.isfinite(adjusted[a]) and np.isfinite(adjusted[b]):
                    adj_diff = adjusted[a] - adjusted[b]
                    adj_var = _contrast_variance(adj_covs, c)
                    lo2, hi2, p2 = t_interval(adj_diff, adj_var, df, self.level)
                    row["adjusted"] = _interval(adj_diff, lo2, hi2, p_value=p2)
                rows_out.append(row)
            _holm_rows(rows_out, self.level)
            differences.extend(rows_out)
            if name == inputs.primary_question:
                primary_means[name] = (estimates, covs, block.df(np.any(selections, axis=0)))
        for src in sources:
            members = mask & (self.code == self.all_sources.index(src))
            by_model[src]["n_items"] = int((members & rated_items).sum())
            by_model[src]["n_items_imported"] = int(members.sum())
            by_model[src]["n_raters"] = len(raters_of[src])
        self._offense(mask, sources, by_model)
        bt = self._bt(mask, sources, by_model, differences)
        self._judged_human(mask, sources, by_model, differences)
        basis = "bt" if bt is not None else inputs.primary_question
        if bt is not None:
            ranks = _simultaneous_ranks(*bt, self.level)
        elif inputs.primary_question in primary_means:
            ranks = _simultaneous_ranks(*primary_means[inputs.primary_question], self.level)
        else:
            ranks = [None] * n_src
        for s, src in enumerate(sources):
            by_model[src]["rank"] = ranks[s]
        return {"by_model": by_model, "differences": differences, "rank_basis": basis}

    # --------------------------------------------------------------------------------------
    def _offense(self, mask: np.ndarray, sources: list[str], by_model: dict[str, Any]) -> None:
        entry = next((q for q in self.questions if q[0] == self.offense_name), None)
        if entry is None:
            return
        _, item, _, y, _, _, _ = entry
        flagged = np.zeros(self.inputs.n_items, dtype=bool)
        answered = np.zeros(self.inputs.n_items, dtype=bool)
        answered[item] = True
        flagged[item[y > 0]] = True
        for src in sources:
            members = mask & (self.code == self.all_sources.index(src)) & answered
            n = int(members.sum())
            share = by_model[src]["questions"].get(self.offense_name)
            if n == 0:
                continue
            k = int(flagged[members].sum())
            low, high = _wilson(float(k), float(n), self.level)
            by_model[src]["offense"] = {
                "any_rater": _interval(k / n, low, high, n=n, flagged_items=k),
                "share_of_raters": share,
            }

    def _bt(
        self,
        mask: np.ndarray,
        sources: list[str],
        by_model: dict[str, Any],
        differences: list[dict[str, Any]],
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...], int] | None:
        block = self.pair_block
        if block is None:
            return None
        in_view = mask[self.pair_left] & mask[self.pair_right]
        if not in_view.any():
            return None
        index = {name: k for k, name in enumerate(sources)}
        n_src = len(sources)
        local = np.full(len(self.all_sources), -1, dtype=np.int64)
        for name, k in index.items():
            local[self.all_sources.index(name)] = k
        src_left = local[self.code[self.pair_left[in_view]]]
        src_right = local[self.code[self.pair_right[in_view]]]
        won = self.pair_left_won[in_view]
        winners = np.where(won, src_left, src_right)
        losers = np.where(won, src_right, src_left)
        fit = bt_fit(winners, losers, n_src)
        if fit.n_components > 1:
            for src in sources:
                by_model[src]["bt"] = None
            return None
        beta = fit.scores
        p_win = 1.0 / (1.0 + np.exp(-(beta[winners] - beta[losers])))
        contrast = np.zeros((winners.size, n_src))
        rows = np.arange(winners.size)
        contrast[rows, winners] = 1.0
        contrast[rows, losers] = -1.0
        weight = p_win * (1.0 - p_win)
        info = (contrast * weight[:, None]).T @ contrast
        scores = np.zeros((self.pair_left.size, n_src))
        scores[in_view] = contrast * (1.0 - p_win)[:, None]
        hessians = np.zeros((self.pair_left.size, n_src, n_src))
        hessians[in_view] = weight[:, None, None] * contrast[:, :, None] * contrast[:, None, :]
        covs = block.deletion_covariances(scores, hessians, info)
        df = block.df(in_view)
        ridge_only = np.zeros(n_src, dtype=bool)
        wins_of = np.bincount(winners, minlength=n_src)
        losses_of = np.bincount(losers, minlength=n_src)
        # A source that never lost (or never won) gets what the data do say: a one-sided
        # profile-likelihood bound relative to the mean of the other sources (ends.py).
        ends = (
            one_sided_bounds(winners, losers, n_src, level=self.level)
            if ((wins_of == 0) | (losses_of == 0)).any()
            else None
        )
        for s, src in enumerate(sources):
            var = _contrast_variance(covs, np.eye(n_src)[s])
            low, high, _ = t_interval(float(beta[s]), var, df, self.level)
            wins = int((winners == s).sum())
            losses = int((losers == s).sum())
            entry = _interval(
                float(beta[s]), low, high, se=math.sqrt(var), df=df, wins=wins, losses=losses
            )
            if wins == 0 or losses == 0:
                # Undefeated or never winning: the ridge, not the data, would set the value.
                entry.update({"value": None, "ci_low": None, "ci_high": None})
                entry["flag"] = "undefeated" if losses == 0 else "never_won"
                bound = float(ends.bound[s]) if ends is not None else float("nan")
                entry["bound"] = bound if math.isfinite(bound) else None
                entry["bound_side"] = (
                    ("lower" if losses == 0 else "upper") if math.isfinite(bound) else None
                )
                ridge_only[s] = True
            by_model[src]["bt"] = entry
        pairs = list(combinations(range(n_src), 2))
        beats = self._p_beats(in_view, src_left, src_right, won, pairs)
        rows_out = []
        for k, (a, b) in enumerate(pairs):
            c = np.zeros(n_src)
            c[a], c[b] = 1.0, -1.0
            diff = float(beta[a] - beta[b])
            var = _contrast_variance(covs, c)
            low, high, p = t_interval(diff, var, df, self.level)
            if ridge_only[a] or ridge_only[b]:
                # A source that never lost (or never won) has no finite strength: a difference
                # with it would be the ridge's number, so it is not given (as the strength isn't).
                diff = low = high = p = float("nan")
            p_beats = beats[k]
            if p_beats is None:
                # The two never met: the model-level BT probability, from the interval above.
                p_beats = _interval(
                    _logistic(diff), _logistic(low), _logistic(high), basis="bt", n=0
                )
            row = {
                "a": sources[a],
                "b": sources[b],
                "question": "bt",
                **_interval(diff, low, high, se=math.sqrt(var), df=df, p_value=p),
                "p_a_beats_b": p_beats,
            }
            if ridge_only[a] or ridge_only[b]:
                row["flag"] = "no_finite_strength"
            rows_out.append(row)
        _holm_rows(rows_out, self.level)
        for row in rows_out:
            self._p_beats_simultaneous(row)
        differences.extend(rows_out)
        return beta, covs, df

    def _p_beats(
        self,
        in_view: np.ndarray,
        src_left: np.ndarray,
        src_right: np.ndarray,
        won: np.ndarray,
        pairs: list[tuple[int, int]],
    ) -> list[dict[str, Any] | None]:
        """Per pair of sources: the share of their judgments A won (items and raters random)."""
        assert self.pair_block is not None
        view_rows = np.flatnonzero(in_view)
        psi = np.zeros((self.pair_left.size, len(pairs)))
        leverage = np.zeros((self.pair_left.size, len(pairs)))
        shares: list[float] = []
        masks: list[np.ndarray | None] = []
        for k, (a, b) in enumerate(pairs):
            met = ((src_left == a) & (src_right == b)) | ((src_left == b) & (src_right == a))
            if not met.any():
                shares.append(float("nan"))
                masks.append(None)
                continue
            a_won = np.where(src_left[met] == a, won[met], ~won[met]).astype(float)
            shares.append(float(a_won.mean()))
            psi[view_rows[met], k] = (a_won - shares[-1]) / met.sum()
            leverage[view_rows[met], k] = 1.0 / met.sum()
            mask = np.zeros(self.pair_left.size, dtype=bool)
            mask[view_rows[met]] = True
            masks.append(mask)
        covs = self.pair_block.covariances(psi, leverage)
        out: list[dict[str, Any] | None] = []
        for k, met_rows in enumerate(masks):
            if met_rows is None:
                out.append(None)
                continue
            var = _contrast_variance(covs, np.eye(len(pairs))[k])
            df = self.pair_block.df(met_rows)
            lo, hi, _ = t_interval(shares[k], var, df, self.level)
            lo, hi = _bounded(shares[k], lo, hi, max(df + 1, 1), self.level)
            out.append(
                _interval(
                    shares[k],
                    lo,
                    hi,
                    basis="direct",
                    n=int(met_rows.sum()),
                    se=math.sqrt(var) if var >= 0 else float("nan"),
                    df=df,
                )
            )
        return out

    def _p_beats_simultaneous(self, row: dict[str, Any]) -> None:
        """`p_a_beats_b`'s interval adjusted like its difference's (same family, same level)."""
        beats, joint = row.get("p_a_beats_b"), row.get("simultaneous")
        if not beats or not joint or beats.get("value") is None:
            if beats:
                beats["simultaneous"] = None
            return
        if beats.get("basis") == "bt":
            low, high = _logistic(joint["ci_low"]), _logistic(joint["ci_high"])
        else:
            level = _family_level(self.level, joint["family"])
            se, df = beats.get("se"), beats.get("df")
            if se is None or df is None:
                beats["simultaneous"] = None
                return
            low, high, _ = t_interval(beats["value"], float(se) ** 2, float(df), level)
            low, high = _bounded(beats["value"], low, high, max(int(df) + 1, 1), level)
        beats["simultaneous"] = _interval(
            beats["value"], low, high, method="bonferroni", family=joint["family"]
        )

    def _judged_human(
        self,
        mask: np.ndarray,
        sources: list[str],
        by_model: dict[str, Any],
        differences: list[dict[str, Any]],
    ) -> None:
        block = self.turing_block
        if block is None:
            return
        item = self.inputs.turing_item
        human = (~self.inputs.turing_guess_ai).astype(float)
        n_src = len(sources)
        psi = np.zeros((item.size, n_src))
        leverage = np.zeros((item.size, n_src))
        estimates = np.full(n_src, np.nan)
        selections = []
        for s, src in enumerate(sources):
            sel = mask[item] & (self.code[item] == self.all_sources.index(src))
            selections.append(sel)
            if sel.any():
                estimates[s] = float(human[sel].mean())
                psi[sel, s] = (human[sel] - estimates[s]) / sel.sum()
                leverage[sel, s] = 1.0 / sel.sum()
        covs = block.covariances(psi, leverage)
        for s, src in enumerate(sources):
            sel = selections[s]
            if not sel.any():
                continue
            var = _contrast_variance(covs, np.eye(n_src)[s])
            df = block.df(sel)
            low, high, _ = t_interval(estimates[s], var, df, self.level)
            low, high = _bounded(estimates[s], low, high, df + 1, self.level)
            by_model[src]["judged_human"] = _interval(
                estimates[s], low, high, n=int(sel.sum()), se=math.sqrt(var), df=df
            )
        rows_out = []
        for a, b in combinations(range(n_src), 2):
            if not (selections[a].any() and selections[b].any()):
                continue
            c = np.zeros(n_src)
            c[a], c[b] = 1.0, -1.0
            diff = float(estimates[a] - estimates[b])
            var = _contrast_variance(covs, c)
            df = block.df(selections[a] | selections[b])
            low, high, p = t_interval(diff, var, df, self.level)
            rows_out.append(
                {
                    "a": sources[a],
                    "b": sources[b],
                    "question": "judged_human",
                    **_interval(diff, low, high, se=math.sqrt(var), df=df, p_value=p),
                }
            )
        _holm_rows(rows_out, self.level)
        differences.extend(rows_out)


def _logistic(x: float) -> float:
    return float(expit(x)) if math.isfinite(x) else float("nan")


def _family_level(level: float, family: int) -> float:
    """Bonferroni's per-comparison level that makes `family` intervals hold jointly."""
    return 1.0 - (1.0 - level) / max(family, 1)


def _holm_rows(rows: list[dict[str, Any]], level: float) -> None:
    """Adjust a family (one view, one measure) for its number of comparisons: Holm's p-values,
    and simultaneous intervals (Bonferroni t intervals at level 1 - (1 - level) / m, m the
    comparisons that have a p-value) that cover all the family's differences together with
    probability >= level. An interval that excludes 0 implies Holm's p < 1 - level (Holm
    rejects whatever Bonferroni does), so the two never contradict each other."""
    p_values = [np.nan if r.get("p_value") is None else r["p_value"] for r in rows]
    adjusted = holm(p_values)
    family = int(np.isfinite(np.asarray(p_values, dtype=float)).sum())
    joint = _family_level(level, family)
    for row, p in zip(rows, adjusted, strict=True):
        row["p_holm"] = _num(p)
        value, se, df = row.get("value"), row.get("se"), row.get("df")
        row["simultaneous"] = None
        if value is not None and se is not None and df is not None and family:
            low, high, _ = t_interval(float(value), float(se) ** 2, float(df), joint)
            row["simultaneous"] = _interval(
                float(value), low, high, method="bonferroni", family=family, level=level
            )


def _simultaneous_ranks(
    estimates: np.ndarray, covs: Any, df: int, level: float
) -> list[dict[str, int] | None]:
    """Rank ranges that hold jointly: Bonferroni over all pairs (1 = best)."""
    n = estimates.size
    ok = np.isfinite(estimates)
    pairs = [(a, b) for a, b in combinations(range(n), 2) if ok[a] and ok[b]]
    above = np.zeros(n, dtype=int)  # sources clearly better
    below = np.zeros(n, dtype=int)  # sources clearly worse
    if pairs and df >= 1:
        crit = float(stdtrit(df, 1.0 - (1.0 - level) / (2.0 * len(pairs))))
        cov_tuple = covs if isinstance(covs, tuple) else (covs, covs, covs)
        for a, b in pairs:
            c = np.zeros(n)
            c[a], c[b] = 1.0, -1.0
            se = math.sqrt(_contrast_variance(cov_tuple, c))
            diff = float(estimates[a] - estimates[b])
            if diff - crit * se > 0:
                above[b] += 1
                below[a] += 1
            elif diff + crit * se < 0:
                above[a] += 1
                below[b] += 1
    n_ok = int(ok.sum())
    return [
        {"low": int(1 + above[s]), "high": int(n_ok - below[s])} if ok[s] else None
        for s in range(n)
    ]


def compare_models(inputs: StudyInputs, *, level: float = 0.95) -> dict[str, Any]:
    """The `models` section of the results document (see the module docstring)."""
    comparison = _Comparison(inputs, level)
    out: dict[str, Any] = {
        "estimand": ESTIMAND,
        "method": "crossed_variance_t",
        "level": level,
        "by_level": {},
        "by_humor_type": {},
        "by_language": {},
    }
    for dimension, name, mask in _views(inputs):
        result = comparison.view(mask)
        if result is None:
            continue
        if dimension == "overall":
            out.update(result)
        else:
            out[dimension][name] = result
    out.setdefault("by_model", {})
    out.setdefault("differences", [])
    return out


__all__ = ["ESTIMAND", "compare_models"]
