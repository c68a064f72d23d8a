"""Calibrating the relevance floor (``memlog.retrieval.relevance``) on graded labels.

Every judged (query, entry) pair gives the evidence a search computes (raw
cosine of the query's vector with the entry's, idf-weighted coverage of the
query's terms) and a label: relevant when graded 1 or 2.  Pooled labels list
their zeros; labels made by reading do not, so every entry of their corpus
counts (unlisted: 0).  A logistic model is fitted by Newton's method, with
and without the cosine (a search with no query vector), on all sets, then
on all but one and judged on the one left out: its AUC, its Brier score,
and, for a few floors, how many of the relevant pairs pass (recall), how
many of the pairs that pass are relevant (precision) and how many of those
below the floor are relevant all the same.  The coefficients
fitted on all sets go into ``relevance.WITH_VECTOR`` / ``LEXICAL_ONLY``,
the floor into ``memory_relevance_floor``'s default.

For prompts the floor is then judged as a prompt's recall uses it: the
default ranking's first ``CANDIDATES`` entries for the prompt, those whose
relevance (by the model fitted on the other prompt sets) reaches the floor,
at most ``SHOWN`` of them.  Reported per floor: how many entries are shown
and for how many prompts, the share of them graded 1 or 2 (and 2), and the
share of the relevant entries among the first ``CANDIDATES`` that are shown.
Without a query vector (``LEXICAL_ONLY``) the ranking is the fused recipe
without its vector signal, as memlog ranks without vectors.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from memlog.home import Home
from memlog.projections.sqlite_view.indexed import indexed_text
from memlog.projections.sqlite_view.plain import View
from memlog.projections.terms import term_counts
from memlog.retrieval import relevance

FLOORS = (0.1, 0.2, 0.3, 0.4, 0.5)
#: a prompt's recall: the entries of the ranking it looks at, and the most it shows
CANDIDATES, SHOWN = 10, 3
RECALL_FLOORS = (0.3, 0.4, 0.5, 0.6, 0.7)


def pairs(judged: Any) -> tuple[np.ndarray, np.ndarray]:
    """Evidence (cosine, coverage) and labels of every judged pair of a label file."""
    corpus = judged.corpus
    position = {i: n for n, i in enumerate(corpus.ids)}
    terms = {i: set(term_counts(indexed_text(e))) for i, e in corpus.entries.items()}
    listed_zeros = any(g == 0 for grades in judged.grades for g in grades.values())
    rows, labels = [], []
    with View(Home(corpus.home)) as view:
        for signal, grades in zip(judged.signals, judged.grades, strict=True):
            weights = relevance.query_weights(view, signal.query)
            ids = list(grades) if listed_zeros else corpus.ids
            for entry in ids:
                cosine = float(signal.vector[position[entry]])
                rows.append((cosine, relevance.coverage(weights, terms[entry])))
                labels.append(1.0 if grades.get(entry, 0) > 0 else 0.0)
    return np.array(rows), np.array(labels)


def fit(x: np.ndarray, y: np.ndarray, steps: int = 50) -> np.ndarray:
    """Logistic regression (intercept first) by Newton's method, lightly regularised."""
    design = np.column_stack([np.ones(len(x)), x])
    beta = np.zeros(design.shape[1])
    ridge = 1e-6 * np.eye(design.shape[1])
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-design @ beta))
        gradient = design.T @ (y - p)
        hessian = design.T @ (design * (p * (1 - p))[:, None]) + ridge
        step = np.linalg.solve(hessian, gradient)
        beta += step
        if np.abs(step).max() < 1e-9:
            break
    return beta


def predict(beta: np.ndarray, x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-(beta[0] + x @ beta[1:])))


def auc(p: np.ndarray, y: np.ndarray) -> float:
    """The chance that a relevant pair scores above an irrelevant one (ties count half)."""
    order = np.argsort(p, kind="stable")
    ranks = np.empty(len(p))
    ranks[order] = np.arange(1, len(p) + 1)
    for value in np.unique(p):  # average ranks of ties
        tied = p == value
        ranks[tied] = ranks[tied].mean()
    positives = y == 1
    n_pos, n_neg = positives.sum(), (~positives).sum()
    if not n_pos or not n_neg:
        return float("nan")
    return float((ranks[positives].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def held_out(name: str, p: np.ndarray, y: np.ndarray) -> dict[str, object]:
    brier = float(((p - y) ** 2).mean())
    line = f"    {name}: AUC {auc(p, y):.3f}, Brier {brier:.4f};"
    floors = {}
    for floor in FLOORS:
        kept = p >= floor
        found = float((kept & (y == 1)).sum() / max((y == 1).sum(), 1))
        precise = float((kept & (y == 1)).sum() / max(kept.sum(), 1))
        below = float((~kept & (y == 1)).sum() / max((~kept).sum(), 1))
        floors[floor] = {"recall": found, "precision": precise, "relevant_below": below}
        line += f" {floor}: R {found:.2f} P {precise:.2f} below {below:.2f}"
    print(line)
    return {"auc": auc(p, y), "brier": brier, "floors": floors}


def report(chosen: list[Any]) -> dict[str, object]:
    """Fits per kind of query (contexts, prompts): the floor serves prompts."""
    out: dict[str, object] = {}
    for kind in sorted({j.labelset.kind for j in chosen}):
        print(f"\nrelevance floor, {kind} sets: logistic fits of 'graded 1 or 2'")
        data = {j.name: pairs(j) for j in chosen if j.labelset.kind == kind}
        out[kind] = fits(data)
        if kind == "prompt":
            found = [j for j in chosen if j.labelset.kind == kind]
            out["prompt recall"] = prompt_recall(found, data)
    return out


def tops(judged: Any, vector: bool) -> list[list[tuple[float, float, int]]]:
    """(cosine, coverage, grade) of the default ranking's first ``CANDIDATES`` per query
    (without its vector signal when ``vector`` is false)."""
    import rankers  # noqa: PLC0415

    corpus = judged.corpus
    ranker = rankers.CANDIDATES["fused"] if vector else rankers.fused(vector=0.0)
    position = {i: n for n, i in enumerate(corpus.ids)}
    terms = {i: set(term_counts(indexed_text(e))) for i, e in corpus.entries.items()}
    found = []
    with View(Home(corpus.home)) as view:
        for signal, grades in zip(judged.signals, judged.grades, strict=True):
            weights = relevance.query_weights(view, signal.query)
            top = rankers.ranked_ids(corpus, ranker(corpus, signal), CANDIDATES)
            vector = signal.vector
            found.append([(float(vector[position[i]]), relevance.coverage(weights, terms[i]),
                           grades.get(i, 0)) for i in top])  # fmt: skip
    return found


def prompt_recall(
    found: list[Any], data: dict[str, tuple[np.ndarray, np.ndarray]]
) -> dict[str, object]:
    """Each prompt set's recall at a few floors, by the model fitted on the other sets."""
    out: dict[str, object] = {}
    for model, columns, vector in (("(cosine, coverage)", [0, 1], True),
                                   ("(coverage) alone", [1], False)):  # fmt: skip
        print(f"\n  a prompt's recall (first {CANDIDATES}, at most {SHOWN} shown), {model}, "
              f"each set by the model fitted on the others:")  # fmt: skip
        for judged in found:
            others = [d for n, d in data.items() if n != judged.name] or list(data.values())
            beta = fit(np.concatenate([d[0][:, columns] for d in others]),
                       np.concatenate([d[1] for d in others]))  # fmt: skip
            rows = tops(judged, vector)
            line, figures = f"    {judged.labelset.name}:", {}
            for floor in RECALL_FLOORS:
                figures[floor] = shown_at(rows, beta, columns, floor)
                line += describe(floor, figures[floor], len(rows))
            print(line)
            out[f"{judged.name}, {model}"] = figures
    return out


def describe(floor: float, f: dict[str, float], queries: int) -> str:
    shares = f"P {f['precision']:.2f} ({f['precision_2']:.2f}) R {f['recall']:.2f}"
    return f" {floor}: {f['shown']:.0f} for {f['prompts']:.0f}/{queries}, {shares};"


def shown_at(
    rows: list[list[tuple[float, float, int]]], beta: np.ndarray, columns: list[int], floor: float
) -> dict[str, float]:
    shown = relevant = directly = prompts = 0
    among = sum(1 for top in rows for r in top if r[2] > 0)
    for top in rows:
        evidence = np.array([[r[0], r[1]] for r in top])[:, columns] if top else np.zeros((0, 2))
        passing = [r for r, p in zip(top, predict(beta, evidence), strict=True) if p >= floor]
        kept = passing[:SHOWN]
        shown += len(kept)
        prompts += bool(kept)
        relevant += sum(r[2] > 0 for r in kept)
        directly += sum(r[2] == 2 for r in kept)
    return {
        "shown": shown, "prompts": prompts, "precision": relevant / max(shown, 1),
        "precision_2": directly / max(shown, 1), "recall": relevant / max(among, 1),
    }  # fmt: skip


def fits(data: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for model, columns in (("(cosine, coverage)", [0, 1]), ("(coverage) alone", [1])):
        x = np.concatenate([d[0][:, columns] for d in data.values()])
        y = np.concatenate([d[1] for d in data.values()])
        beta = fit(x, y)
        print(f"  on {model}, all these sets ({len(y)} pairs, {int(y.sum())} relevant): "
              f"coefficients {np.round(beta, 3).tolist()}")  # fmt: skip
        held: dict[str, object] = {}
        for name, (xs, ys) in data.items():
            others = [d for n, d in data.items() if n != name]
            if others:
                beta_out = fit(np.concatenate([d[0][:, columns] for d in others]),
                               np.concatenate([d[1] for d in others]))  # fmt: skip
                label = f"{name}, fitted on the others"
            else:
                beta_out, label = beta, f"{name} (in sample: one set only)"
            held[label] = held_out(label, predict(beta_out, xs[:, columns]), ys)
        out[model] = {"coefficients": beta.tolist(), "held_out": held}
    return out
