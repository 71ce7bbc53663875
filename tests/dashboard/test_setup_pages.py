"""Study set-up and live progress pages: roles, validation, and nothing changed on a denial."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from apps.raters.models import BackgroundGroup
from apps.raters.services import rater_enroll
from apps.studies.models import Item, Study, StudyMembership
from apps.studies.services import study_create, study_member_add

pytestmark = pytest.mark.django_db

PAGES = ["overview", "progress", "settings"]


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user("owner", password="pw-owner-123")


@pytest.fixture
def outsider(django_user_model):
    return django_user_model.objects.create_user("outsider", password="pw-outsider-123")


@pytest.fixture
def admin(django_user_model):
    return django_user_model.objects.create_superuser("boss", password="pw-boss-123")


@pytest.fixture
def study(owner):
    study = study_create(slug="pilot", rubric_slug="humor", name="Pilot", owner=owner)
    Item.objects.create(study=study, external_id="a", text="A joke", source="human")
    return study


def client_for(user) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def snapshot(study: Study) -> tuple:
    study.refresh_from_db()
    groups = tuple(
        BackgroundGroup.objects.filter(study=study).values_list("code", "quota", "filled")
    )
    return (
        study.status,
        study.session_minutes,
        study.attention_check_rate,
        study.task_mix,
        groups,
        Item.objects.filter(study=study).count(),
        Study.objects.count(),
    )


@pytest.mark.parametrize("page", PAGES)
def test_anonymous_visitors_are_sent_to_login(study, page):
    response = Client().get(f"/studies/{study.slug}/{'' if page == 'overview' else page + '/'}")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize("page", PAGES)
def test_a_rater_browser_session_gives_no_researcher_access(study, page):
    study.status = Study.Status.OPEN
    study.save()
    client = Client()
    client.post(
        f"/s/{study.slug}/",
        {
            "background": "technical",
            "age_band": "25-34",
            "consent": "on",
            "languages": ["en", "zh"],
        },
    )
    response = client.get(f"/studies/{study.slug}/{'' if page == 'overview' else page + '/'}")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize("page", PAGES)
def test_researchers_of_other_studies_get_not_found(study, outsider, page):
    study_create(slug="theirs", rubric_slug="humor", owner=outsider)
    response = client_for(outsider).get(
        f"/studies/{study.slug}/{'' if page == 'overview' else page + '/'}"
    )
    assert response.status_code == 404


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("who", ["owner", "member", "admin"])
def test_owners_members_and_admins_see_the_pages(study, owner, admin, django_user_model, page, who):
    user = {"owner": owner, "admin": admin}.get(who)
    if who == "member":
        user = django_user_model.objects.create_user("member", password="pw-member-123")
        study_member_add(study=study, user=user)
    response = client_for(user).get(
        f"/studies/{study.slug}/{'' if page == 'overview' else page + '/'}"
    )
    assert response.status_code == 200


def test_study_list_shows_only_ones_own_studies(study, outsider, admin):
    study_create(slug="theirs", rubric_slug="humor", name="Theirs", owner=outsider)
    own = client_for(outsider).get("/studies/").content.decode()
    assert "Theirs" in own
    assert "Pilot" not in own
    everything = client_for(admin).get("/studies/").content.decode()
    assert "Theirs" in everything
    assert "Pilot" in everything


def test_creating_a_study_makes_the_creator_its_owner(outsider):
    response = client_for(outsider).post(
        "/studies/new/", {"slug": "new-one", "name": "New one", "rubric": "content"}
    )
    assert response.status_code == 302
    study = Study.objects.get(slug="new-one")
    assert study.status == "draft"
    assert study.rubric.slug == "content"
    assert StudyMembership.objects.get(study=study).user == outsider


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ({"slug": "Bad Slug", "name": "x", "rubric": "humor"}, "slug"),
        ({"slug": "pilot", "name": "x", "rubric": "humor"}, "already exists"),
        ({"slug": "ok", "name": "x", "rubric": "poems"}, "rubric"),
    ],
)
def test_bad_new_study_is_refused_with_a_message_and_nothing_created(
    study, outsider, data, fragment
):
    before = Study.objects.count()
    response = client_for(outsider).post("/studies/new/", data)
    assert response.status_code == 400
    assert fragment in response.content.decode()
    assert Study.objects.count() == before


def _settings_post(study: Study, **overrides) -> dict:
    data = {
        "s-name": study.name,
        "s-description": "",
        "s-session_minutes": 30,
        "s-tasks_per_session": 40,
        "s-target_scorecards_per_item": 15,
        "s-pair_appearances_per_item": 3,
        "s-pair_min_opponents": 2,
        "s-turing_judgments_per_item": 10,
        "s-attention_check_rate": 0.05,
        "s-min_items_per_model": 30,
        "s-min_raters_per_item": 15,
        "s-prolific_completion_code": "",
        "s-prolific_screenout_code": "",
        "s-screening_top_k": 20,
        "s-exclusion_max_attention_failures": 1,
        "s-exclusion_speeder_seconds": 3.0,
        "s-exclusion_straight_line_tasks": 5,
        "s-exclusion_position_min_pairs": 10,
        "s-exclude_items_not_evidence": "on",
        "s-culture_fdr": 0.1,
        "s-share_scorecard": 0.6,
        "s-share_pair": 0.3,
        "s-share_turing": 0.1,
        "q-quota_technical": "",
        "q-quota_content_operations": "",
        "q-quota_administrative_support": "",
        "q-quota_traditional_industries": "",
    }
    data.update(overrides)
    return data


def test_settings_and_quotas_are_saved(study, owner):
    response = client_for(owner).post(
        f"/studies/{study.slug}/settings/",
        _settings_post(
            study,
            **{
                "s-session_minutes": 20,
                "s-adaptive_pairing": "on",
                "q-quota_technical": 12,
                "s-share_turing": 0.0,
                "s-prolific_completion_code": "C0DE",
            },
        ),
    )
    assert response.status_code == 302
    study.refresh_from_db()
    assert (study.session_minutes, study.adaptive_pairing, study.prolific_completion_code) == (
        20,
        True,
        "C0DE",
    )
    assert study.task_mix == {"scorecard": 0.6, "pair": 0.3, "turing": 0.0}
    assert study.culture_fdr == 0.1
    assert BackgroundGroup.objects.get(study=study, code="technical").quota == 12


@pytest.mark.parametrize(
    ("overrides", "fragment"),
    [
        ({"s-attention_check_rate": 0.9}, "attention-check rate"),
        ({"s-session_minutes": 0}, "session length"),
        ({"s-share_scorecard": 0, "s-share_pair": 0, "s-share_turing": 0}, "task_mix"),
        ({"s-pair_min_opponents": 5}, "opponents"),
        ({"q-quota_technical": -1}, "greater than or equal to 0"),
        ({"s-session_minutes": "half an hour"}, "whole number"),
        ({"s-culture_fdr": 1}, "greater than 0 and less than 1"),
        ({"s-culture_fdr": 0}, "greater than 0 and less than 1"),
        ({"s-culture_fdr": 2.5}, "greater than 0 and less than 1"),
        ({"s-culture_fdr": "a tenth"}, "Enter a number"),
    ],
)
def test_bad_settings_are_refused_with_a_message_and_nothing_saved(
    study, owner, overrides, fragment
):
    before = snapshot(study)
    response = client_for(owner).post(
        f"/studies/{study.slug}/settings/", _settings_post(study, **overrides)
    )
    assert response.status_code == 400
    assert fragment in response.content.decode()
    assert snapshot(study) == before


def test_quota_below_places_taken_is_refused_and_nothing_saved(study, owner):
    study.status = Study.Status.OPEN
    study.save()
    for _ in range(3):
        rater_enroll(study=study, background="technical", age_band="25-34", consent=True)
    before = snapshot(study)
    response = client_for(owner).post(
        f"/studies/{study.slug}/settings/",
        _settings_post(study, **{"q-quota_technical": 2, "s-session_minutes": 12}),
    )
    assert response.status_code == 400
    assert "already enrolled" in response.content.decode()
    assert snapshot(study) == before


def test_outsider_cannot_change_settings(study, outsider):
    before = snapshot(study)
    response = client_for(outsider).post(
        f"/studies/{study.slug}/settings/", _settings_post(study, **{"s-session_minutes": 5})
    )
    assert response.status_code == 404
    assert snapshot(study) == before


def test_uploading_items_uses_the_import_validation(study, owner):
    good = "\n".join(
        json.dumps({"id": f"n{i}", "text": f"joke {i}", "source": "human"}) for i in range(3)
    )
    response = client_for(owner).post(
        f"/studies/{study.slug}/items/", {"file": SimpleUploadedFile("items.jsonl", good.encode())}
    )
    assert response.status_code == 302
    assert Item.objects.filter(study=study).count() == 4


def test_bad_item_file_shows_every_bad_line_and_saves_nothing(study, owner):
    bad = '{"id": "x1", "text": "ok", "source": "human"}\n{"id": "x2"}\nnot json\n'
    response = client_for(owner).post(
        f"/studies/{study.slug}/items/", {"file": SimpleUploadedFile("items.jsonl", bad.encode())}
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert "2 bad lines; nothing was imported" in page
    assert "is required" in page
    assert "not valid JSON" in page
    assert Item.objects.filter(study=study).count() == 1


def test_upload_by_an_outsider_is_not_found_and_saves_nothing(study, outsider):
    good = json.dumps({"id": "n1", "text": "joke", "source": "human"})
    response = client_for(outsider).post(
        f"/studies/{study.slug}/items/", {"file": SimpleUploadedFile("items.jsonl", good.encode())}
    )
    assert response.status_code == 404
    assert Item.objects.filter(study=study).count() == 1


def test_opening_and_closing_a_study(study, owner):
    client = client_for(owner)
    assert client.post(f"/studies/{study.slug}/status/", {"status": "open"}).status_code == 302
    study.refresh_from_db()
    assert study.status == "open"
    assert client.post(f"/studies/{study.slug}/status/", {"status": "closed"}).status_code == 302
    study.refresh_from_db()
    assert study.status == "closed"


@pytest.mark.parametrize(("status", "code"), [("flying", 400), ("draft", 409)])
def test_bad_status_changes_are_refused(study, owner, status, code):
    client = client_for(owner)
    client.post(f"/studies/{study.slug}/status/", {"status": "open"})
    response = client.post(f"/studies/{study.slug}/status/", {"status": status})
    assert response.status_code == code
    study.refresh_from_db()
    assert study.status == "open"


def test_a_study_without_items_cannot_open(owner):
    empty = study_create(slug="empty", rubric_slug="humor", owner=owner)
    response = client_for(owner).post(f"/studies/{empty.slug}/status/", {"status": "open"})
    assert response.status_code == 400
    assert "needs items" in response.content.decode()
    empty.refresh_from_db()
    assert empty.status == "draft"


def test_progress_counts_match_the_data(
    demo_study, django_user_model, django_assert_max_num_queries
):
    user = django_user_model.objects.create_user("r", password="pw-r-123456")
    study_member_add(study=demo_study, user=user)
    client = client_for(user)
    with django_assert_max_num_queries(20):
        response = client.get(f"/studies/{demo_study.slug}/progress/")
    assert response.status_code == 200
    progress = response.context["progress"]
    assert progress["items"] == 70
    assert progress["scorecards"]["done"] == 1280
    assert progress["pairs"]["done"] == 240
    assert progress["turing"]["done"] == 235
    assert sum(g["imported"] for g in progress["groups"]) == 24
    page = response.content.decode()
    assert '<svg class="heatmap"' in page
    assert 'data-value="scorecards">1280<' in page


def test_the_heat_map_of_a_large_study_is_bounded_and_keeps_gaps_visible():
    from apps.dashboard.selectors import Coverage
    from apps.dashboard.templatetags.dashboard import MAX_HEATMAP_ROWS, coverage_heatmap

    rows = [(f"i{n:04d}", [5, 5]) for n in range(2000)]
    rows[1000] = ("i1000", [0, 5])  # one uncovered cell among well-covered neighbours
    svg = str(coverage_heatmap(Coverage(groups=["a", "b"], rows=rows, per_group_target=5)))
    assert svg.count("<rect") == MAX_HEATMAP_ROWS * 2
    assert "hsl(222,60%,96%)" in svg  # the gap still shows as an empty (palest) cell


def test_a_study_with_a_custom_rubric_copied_from_the_humor_scorecard(outsider):
    import json

    page = client_for(outsider).get("/studies/new/").content.decode()
    assert "my-rubric" in page  # the copy to edit
    spec = {
        "slug": "zero-based",
        "name": "Zero-based",
        "questions": [
            {
                "name": "grade",
                "kind": "likert",
                "min_value": 0,
                "max_value": 3,
                "prompt": {"en": "How funny?", "zh": "多好笑？"},
            }
        ],
    }
    response = client_for(outsider).post(
        "/studies/new/",
        {
            "slug": "own",
            "name": "Own",
            "rubric": "custom",
            "rubric_spec": json.dumps(spec),
            "backgrounds": "students, staff",
        },
    )
    assert response.status_code == 302
    study = Study.objects.get(slug="own")
    assert study.rubric.slug == "zero-based"
    assert list(study.background_groups.values_list("code", flat=True)) == ["students", "staff"]


def test_a_bad_custom_rubric_on_the_setup_page_names_the_field(outsider):
    import json

    spec = {
        "slug": "bad",
        "questions": [
            {
                "name": "grade",
                "kind": "likert",
                "min_value": 0,
                "max_value": 0,
                "prompt": {"en": "x", "zh": "y"},
            }
        ],
    }
    response = client_for(outsider).post(
        "/studies/new/",
        {"slug": "own", "name": "Own", "rubric": "custom", "rubric_spec": json.dumps(spec)},
    )
    assert response.status_code == 400
    assert "questions[0].max_value" in response.content.decode()
    assert not Study.objects.filter(slug="own").exists()


def test_the_custom_rubric_can_start_from_any_stored_rubric(outsider):
    """The content rubric (or any other) is copied to edit, as the humor scorecard is; an
    unknown choice falls back to the humor scorecard."""
    import json
    import re
    from html import unescape

    def starting(url: str) -> dict:
        page = client_for(outsider).get(url).content.decode()
        text = re.search(r'<textarea name="rubric_spec"[^>]*>(.*?)</textarea>', page, re.S)
        assert text, "no custom rubric box"
        return json.loads(unescape(text.group(1)))

    content = starting("/studies/new/?copy=content")
    assert content["slug"] == "my-rubric"
    assert content["kind"] == "content"
    assert "builtin" not in content
    assert starting("/studies/new/?copy=nope")["kind"] == "humor"
    page = client_for(outsider).get("/studies/new/").content.decode()
    assert 'href="?copy=content"' in page
