"""A study of 15,000 items gives a readable report: warnings and item flags are counted, not
listed, and the report stays well under 1 MB."""

from __future__ import annotations

from datetime import UTC, datetime

from django.utils import translation

from apps.reports import writers

N = 15_000


def _document() -> dict:
    items = [
        {
            "item": f"t{i:05d}",
            "source": "crowd",
            "level": "single",
            "humor_type": "",
            "n_raters": 5,
            "n_pairs": 0,
            "questions": {},
            "flags": ["too_few_raters", *(["controversial"] if i % 5 < 3 else [])]
            + (["culture_dependent"] if i % 3 == 0 else []),
        }
        for i in range(N)
    ]
    # Results stored before warnings were summarised: one warning per item.
    warnings = [
        {
            "code": "too_few_raters",
            "subject": item["item"],
            "message": f"Item {item['item']} has 5 raters; at least 15 are needed.",
            "value": 5,
            "threshold": 15,
        }
        for item in items
    ]
    warnings.append(
        {
            "code": "controversial_question",
            "scope": "study",
            "subject": "grade",
            "params": {"question": "grade", "measure": "ordinal", "value": 0.2, "threshold": 0.4},
            "message": "agreement on grade is 0.20",
            "value": 0.2,
            "threshold": 0.4,
        }
    )
    left_out = [
        {"item": item["item"], "flags": ["culture_dependent"]}
        for item in items
        if "culture_dependent" in item["flags"]
    ]
    return {
        "seed": 1,
        "rounds": 200,
        "input_hash": "0" * 64,
        "counts": {"items": N, "raters": 76_500, "score_answers": 76_500},
        "items": items,
        "warnings": warnings,
        "evidence_only": {"left_out": left_out, "results": {"groups": {}}},
    }


def _html(language: str) -> str:
    study = writers.ReportStudy(name="Crowd grades", slug="crowd", questions=[], groups=[])
    with translation.override(language):
        context = writers.report_context(
            _document(), study=study, generated_at=datetime(2026, 12, 1, tzinfo=UTC)
        )
        return writers.render_report_html(context)


def test_the_report_of_a_15000_item_study_counts_its_flags_and_stays_small():
    html = _html("en")
    assert len(html.encode()) < 300_000
    # The study-level warning comes first, the per-item flags as counts.
    warnings = html[html.index('id="warnings"') :]
    assert warnings.index('data-code="controversial_question"') < warnings.index(
        'data-flag="too_few_raters"'
    )
    assert (
        '<tr data-flag="too_few_raters"><td>too few raters</td><td class="num">15000</td>' in html
    )
    assert '<tr data-flag="controversial"><td>controversial</td><td class="num">9000</td>' in html
    assert "t14999" not in html
    assert "and 4950 more" in html


def test_the_chinese_report_counts_the_same_flags():
    html = _html("zh-hans")
    assert len(html.encode()) < 300_000
    assert '<tr data-flag="too_few_raters"><td>评分者过少</td><td class="num">15000</td>' in html


def test_the_charts_of_a_15000_item_study_are_bounded_and_the_report_stays_under_1_mb():
    document = _document()
    levels = ("single", "multi_turn", "scenario")
    for i, item in enumerate(document["items"]):
        item["level"] = levels[i % 3]
    document["bradley_terry_by_level"] = {
        level: [
            {
                "item": item["item"],
                "score": 1.0 - rank / 5000,
                "ci_low": 0.5 - rank / 5000,
                "ci_high": 1.5 - rank / 5000,
                "rank": rank + 1,
                "component": 0,
            }
            for rank, item in enumerate(i for i in document["items"] if i["level"] == level)
        ]
        for level in levels
    }
    study = writers.ReportStudy(name="Crowd grades", slug="crowd", questions=[], groups=[])
    with translation.override("en"):
        html = writers.render_report_html(
            writers.report_context(
                document, study=study, generated_at=datetime(2026, 12, 1, tzinfo=UTC)
            )
        )
    for level in levels:
        chart = html.split(f'data-figure="leaderboard-{level}"', 1)[1].split("</figure>", 1)[0]
        # The top 50 and the bottom 10 of the 5,000 items, and a row saying how many are left out.
        assert chart.count('<circle class="dot"') == 60
        assert "4940 items not shown" in chart
    assert len(html.encode()) < 1_000_000
