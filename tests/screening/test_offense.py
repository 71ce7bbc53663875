"""The offense filter: the matcher, the shipped term lists, holding on import, release, re-scan,
the admin's term lists and the researcher page."""

from __future__ import annotations

import importlib
import json

import pytest
from django.apps import apps as registry
from django.test import Client

from apps.assignments.selectors import study_items_to_rank
from apps.assignments.services import assignment_next
from apps.core.errors import Conflict, NotFound
from apps.raters.services import rater_enroll
from apps.screening.models import (
    FunnyScoreCalibration,
    ItemFeatures,
    JudgeComparison,
    JudgeVerdict,
    OffenseMatch,
    OffenseTerm,
    ScreeningRun,
)
from apps.screening.offense import Matcher, excerpt, find_offense
from apps.screening.offense_defaults import CATEGORIES, DEFAULT_OFFENSE_TERMS
from apps.screening.services.offense import (
    item_offense_release,
    offense_rescan_study,
    offense_scan_items,
)
from apps.studies.models import Item, Study
from apps.studies.services import study_create, study_items_import, study_member_add

# --- the matcher ---------------------------------------------------------------------------------


def test_english_terms_match_whole_words_in_any_case():
    terms = [("en", "ass")]
    assert [hit.matched for hit in find_offense(terms, "What an ASS. Ass!")] == ["ASS", "Ass"]
    assert find_offense(terms, "The class passed; the assistant took a bass to mass.") == []


def test_english_phrases_match_across_any_whitespace_hyphens_and_curly_apostrophes():
    terms = [("en", "son of a bitch"), ("en", "i'll kill you"), ("en", "self-harm")]
    hits = find_offense(terms, "Son  of\na BITCH, I’ll kill you. No self harm, no SELF-HARM.")
    assert [(hit.term, hit.matched, hit.start) for hit in hits] == [
        ("son of a bitch", "Son  of\na BITCH", 0),
        ("i'll kill you", "I’ll kill you", 17),
        ("self-harm", "self harm", 35),
        ("self-harm", "SELF-HARM", 49),
    ]


def test_chinese_terms_match_inside_running_text():
    terms = [("zh", "傻逼"), ("zh", "自杀")]
    hits = find_offense(terms, "你这个傻逼，真是傻逼透了。自杀式加班不可取。")
    assert [(hit.term, hit.start) for hit in hits] == [("傻逼", 3), ("傻逼", 8), ("自杀", 13)]
    assert find_offense(terms, "我的代码没有bug，只有未被发现的特性。") == []


def test_terms_of_every_language_are_looked_for_in_every_text():
    terms = [("en", "shit"), ("zh", "卧槽")]
    mixed = "这个bug真是shit。Then I said 卧槽 out loud."
    assert [(hit.language, hit.matched) for hit in find_offense(terms, mixed)] == [
        ("en", "shit"),
        ("zh", "卧槽"),
    ]
    # Next to a Han character an English term still stands alone, but not inside an English word.
    assert find_offense(terms, "这个bug真是shitty") == []


def test_the_longest_term_is_reported_where_two_terms_start_together():
    matcher = Matcher([("en", "shit"), ("en", "piece of shit")])
    hits = matcher.find("You piece of shit. Shit.")
    assert [hit.term for hit in hits] == ["piece of shit", "shit"]


def test_a_matcher_without_terms_finds_nothing():
    assert Matcher([]).find("anything at all") == []
    assert Matcher([("en", "   ")]).find("   ") == []


def test_an_excerpt_shows_the_match_with_its_surroundings():
    text = "a" * 50 + " shit " + "b" * 50
    shown = excerpt(text, start=51, length=4, width=10)
    assert (shown.before, shown.matched, shown.after) == ("…aaaaaaaaa ", "shit", " bbbbbbbbb…")


# --- the shipped lists ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_default_terms_are_installed_by_migration_in_both_languages():
    installed = set(OffenseTerm.objects.values_list("language", "term", "category"))
    assert set(DEFAULT_OFFENSE_TERMS) <= installed
    for language in ("en", "zh"):
        count = OffenseTerm.objects.filter(language=language, is_active=True).count()
        assert 25 <= count <= 45
    assert {category for _, _, category in DEFAULT_OFFENSE_TERMS} == set(CATEGORIES)


@pytest.mark.django_db
def test_reversing_the_migration_removes_exactly_the_shipped_defaults():
    migration = importlib.import_module("apps.screening.migrations.0002_default_offense_terms")
    OffenseTerm.objects.create(language="en", term="durian", category="insult")
    migration.uninstall(registry, None)
    assert list(OffenseTerm.objects.values_list("term", flat=True)) == ["durian"]
    migration.install(registry, None)
    assert OffenseTerm.objects.count() == len(migration.SHIPPED) + 1


@pytest.mark.django_db
def test_the_demo_items_are_not_held_by_the_default_lists(demo_study):
    assert not Item.objects.filter(study=demo_study, stage=Item.Stage.HELD).exists()
    assert not OffenseMatch.objects.filter(item__study=demo_study).exists()


# --- holding, releasing, re-scanning -------------------------------------------------------------

ITEMS = [
    {"id": "clean", "text": "My cat reviews my code and approves nothing.", "source": "model-a"},
    {"id": "rude", "text": "Only a moron deploys on Friday.", "source": "model-a"},
    {
        "id": "chat",
        "text": "Well, that escalated.",
        "source": "model-b",
        "level": "multi_turn",
        "context": [
            {"role": "user", "text": "My manager called me a dumbass."},
            {"role": "assistant", "text": "Harsh."},
            {"role": "user", "text": "老板骂我是白痴。"},
        ],
    },
    {
        "id": "scene",
        "text": "他只是在开玩笑。",
        "source": "model-b",
        "lang": "zh",
        "level": "scenario",
        "scenario": "同事说“卧槽”，请幽默地回应。",
    },
]


def jsonl(rows: list[dict[str, object]]) -> bytes:
    return "\n".join(json.dumps(row, ensure_ascii=False) for row in rows).encode()


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user("owner", password="pw-owner-123")


@pytest.fixture
def study(db, owner) -> Study:
    study = study_create(slug="pilot", rubric_slug="humor", name="Pilot", owner=owner)
    study_items_import(study=study, data=jsonl(ITEMS), filename="items.jsonl")
    return study


def item(study: Study, external_id: str) -> Item:
    return Item.objects.get(study=study, external_id=external_id)


@pytest.mark.django_db
def test_importing_offending_items_holds_them_and_keeps_them(owner):
    study = study_create(slug="pilot", rubric_slug="humor", owner=owner)
    summary = study_items_import(study=study, data=jsonl(ITEMS), filename="items.jsonl")
    assert (summary.created, summary.held) == (4, 3)
    stages = dict(Item.objects.filter(study=study).values_list("external_id", "stage"))
    assert stages == {"clean": "study", "rude": "held", "chat": "held", "scene": "held"}
    assert set(
        Item.objects.filter(stage=Item.Stage.HELD).values_list("held_from_stage", flat=True)
    ) == {"study"}
    found = set(
        OffenseMatch.objects.filter(item__study=study).values_list(
            "item__external_id", "term__term", "matched", "where", "start"
        )
    )
    assert found == {
        ("rude", "moron", "moron", "text", 7),
        ("chat", "dumbass", "dumbass", "context:0", 23),
        ("chat", "白痴", "白痴", "context:2", 5),
        ("scene", "卧槽", "卧槽", "scenario", 4),
    }


@pytest.mark.django_db
def test_importing_the_same_file_again_holds_nothing_new(study):
    again = study_items_import(study=study, data=jsonl(ITEMS), filename="items.jsonl")
    assert (again.created, again.unchanged, again.held) == (0, 4, 0)
    assert OffenseMatch.objects.filter(item__study=study).count() == 4


@pytest.mark.django_db
def test_a_candidate_is_held_from_and_released_back_to_the_candidates(owner):
    study = study_create(slug="pilot", rubric_slug="humor", owner=owner)
    study_items_import(
        study=study, data=jsonl(ITEMS[:2]), filename="items.jsonl", as_candidates=True
    )
    rude = item(study, "rude")
    assert (rude.stage, rude.held_from_stage) == ("held", "candidate")
    released = item_offense_release(study=study, item_id=rude.pk, user=owner)
    assert (released.stage, released.held_from_stage) == ("candidate", "")


def _enroll(study: Study):  # type: ignore[no-untyped-def]
    return rater_enroll(study=study, background="technical", age_band="25-34", consent=True)


@pytest.mark.django_db
def test_a_held_item_is_left_out_of_the_rater_flow(owner):
    study = study_create(
        slug="pilot", rubric_slug="humor", owner=owner, task_mix={"scorecard": 1.0}
    )
    study_items_import(study=study, data=jsonl(ITEMS[1:2]), filename="items.jsonl")
    study.status = Study.Status.OPEN
    study.attention_check_rate = 0
    study.save()
    rude = item(study, "rude")
    enrollment = _enroll(study)
    assert study_items_to_rank(study=study) == []
    assert assignment_next(rater=enrollment.rater, session=enrollment.session) is None

    item_offense_release(study=study, item_id=rude.pk, user=owner)
    assert [row[0] for row in study_items_to_rank(study=study)] == [rude.pk]
    assignment = assignment_next(rater=enrollment.rater, session=enrollment.session)
    assert assignment is not None
    assert assignment.item_id == rude.pk


@pytest.mark.django_db
def test_release_puts_the_item_back_and_a_rescan_does_not_hold_it_again(study, owner):
    rude = item(study, "rude")
    released = item_offense_release(study=study, item_id=rude.pk, user=owner)
    assert (released.stage, released.held_from_stage) == ("study", "")
    assert released.offense_released_by == owner
    assert released.offense_released_at is not None

    assert offense_rescan_study(study=study) == 2
    rude.refresh_from_db()
    assert rude.stage == "study"
    # Released, not forgotten: the matches stay on record.
    assert list(rude.offense_matches.values_list("matched", flat=True)) == ["moron"]


@pytest.mark.django_db
def test_a_rescan_frees_an_item_whose_term_was_deactivated(study):
    OffenseTerm.objects.filter(language="en", term="moron").update(is_active=False)
    assert offense_rescan_study(study=study) == 2
    rude = item(study, "rude")
    assert (rude.stage, rude.held_from_stage) == ("study", "")
    assert not rude.offense_matches.exists()
    assert rude.offense_released_at is None


@pytest.mark.django_db
def test_scanning_twice_keeps_one_set_of_matches(study):
    before = sorted(OffenseMatch.objects.values_list("item_id", "matched", "where", "start"))
    assert offense_scan_items(items=list(Item.objects.filter(study=study))) == 3
    after = sorted(OffenseMatch.objects.values_list("item_id", "matched", "where", "start"))
    assert after == before


@pytest.mark.django_db
def test_releasing_an_item_that_is_not_held_or_not_in_the_study_is_refused(study, owner):
    other = study_create(slug="other", rubric_slug="humor")
    with pytest.raises(Conflict) as conflict:
        item_offense_release(study=study, item_id=item(study, "clean").pk, user=owner)
    assert conflict.value.field == "item_id"
    assert "clean" in conflict.value.message
    with pytest.raises(NotFound):
        item_offense_release(study=other, item_id=item(study, "rude").pk, user=owner)
    assert item(study, "rude").stage == "held"


# --- the admin -----------------------------------------------------------------------------------


@pytest.fixture
def admin(django_user_model):
    return django_user_model.objects.create_superuser("boss", password="pw-boss-123")


def client_for(user) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


@pytest.mark.django_db
def test_editing_a_term_in_the_admin_then_rescanning_changes_the_matches(study, admin):
    Item.objects.create(
        study=study, external_id="fruit", text="The durian is a moron of a fruit.", source="x"
    )
    Item.objects.create(
        study=study, external_id="durian", text="Durian smells; nobody says why.", source="x"
    )
    term = OffenseTerm.objects.get(language="en", term="moron")
    client = client_for(admin)
    page = client.get(f"/admin/screening/offenseterm/{term.pk}/change/")
    assert page.status_code == 200
    response = client.post(
        f"/admin/screening/offenseterm/{term.pk}/change/",
        {"language": "en", "term": "durian", "category": "insult", "is_active": "on"},
    )
    assert response.status_code == 302
    term.refresh_from_db()
    assert term.term == "durian"

    offense_rescan_study(study=study)
    rude, fruit, durian = item(study, "rude"), item(study, "fruit"), item(study, "durian")
    assert rude.stage == "study"
    assert not rude.offense_matches.exists()
    assert fruit.stage == durian.stage == "held"
    assert list(durian.offense_matches.values_list("term__term", "matched")) == [
        ("durian", "Durian")
    ]


@pytest.mark.django_db
def test_the_admin_switches_terms_off_from_the_list(study, admin):
    terms = list(OffenseTerm.objects.order_by("language", "term"))
    data = {
        "form-TOTAL_FORMS": str(len(terms)),
        "form-INITIAL_FORMS": str(len(terms)),
        "_save": "Save",
    }
    for index, term in enumerate(terms):
        data[f"form-{index}-id"] = str(term.pk)
        if term.term != "moron":
            data[f"form-{index}-is_active"] = "on"
    response = client_for(admin).post("/admin/screening/offenseterm/?all=", data)
    assert response.status_code == 302
    assert list(OffenseTerm.objects.filter(is_active=False).values_list("term", flat=True)) == [
        "moron"
    ]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "model",
    [
        OffenseMatch,
        ItemFeatures,
        FunnyScoreCalibration,
        ScreeningRun,
        JudgeVerdict,
        JudgeComparison,
    ],
)
def test_machine_output_is_shown_read_only_in_the_admin(study, admin, model):
    name = model._meta.model_name
    client = client_for(admin)
    assert client.get(f"/admin/screening/{name}/").status_code == 200
    assert client.get(f"/admin/screening/{name}/add/").status_code == 403
    if model is OffenseMatch:
        match = OffenseMatch.objects.first()
        assert match is not None
        before = OffenseMatch.objects.count()
        assert (
            client.post(
                f"/admin/screening/offensematch/{match.pk}/delete/", {"post": "yes"}
            ).status_code
            == 403
        )
        assert OffenseMatch.objects.count() == before


# --- the page ------------------------------------------------------------------------------------


@pytest.fixture
def outsider(django_user_model):
    user = django_user_model.objects.create_user("outsider", password="pw-outsider-123")
    study_create(slug="theirs", rubric_slug="humor", owner=user)
    return user


@pytest.fixture
def member(study, django_user_model):
    user = django_user_model.objects.create_user("member", password="pw-member-123")
    study_member_add(study=study, user=user)
    return user


def snapshot(study: Study) -> tuple:
    return (
        tuple(
            Item.objects.filter(study=study)
            .order_by("external_id")
            .values_list("external_id", "stage", "held_from_stage", "offense_released_at")
        ),
        tuple(OffenseMatch.objects.order_by("pk").values_list("pk", "item_id", "matched")),
    )


def url(study: Study, name: str = "") -> str:
    return f"/studies/{study.slug}/screening/offense/{name + '/' if name else ''}"


def test_anonymous_visitors_are_sent_to_login_and_change_nothing(study):
    before = snapshot(study)
    client = Client()
    for response in (
        client.get(url(study)),
        client.post(url(study, "rescan")),
        client.post(url(study, "release"), {"item_id": item(study, "rude").pk}),
    ):
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/")
    assert snapshot(study) == before


def test_researchers_of_other_studies_get_not_found_and_change_nothing(study, outsider):
    OffenseTerm.objects.create(language="en", term="cat", category="insult")
    before = snapshot(study)
    client = client_for(outsider)
    assert client.get(url(study)).status_code == 404
    assert client.post(url(study, "rescan")).status_code == 404
    release = client.post(url(study, "release"), {"item_id": item(study, "rude").pk})
    assert release.status_code == 404
    assert snapshot(study) == before


@pytest.mark.parametrize("who", ["owner", "member", "admin"])
def test_owners_members_and_admins_see_held_items_with_their_matches(
    study, owner, member, admin, who
):
    user = {"owner": owner, "member": member, "admin": admin}[who]
    response = client_for(user).get(url(study))
    assert response.status_code == 200
    page = response.content.decode()
    assert 'data-item="rude"' in page
    assert "Only a <mark>moron</mark> deploys on Friday." in page
    assert "My manager called me a <mark>dumbass</mark>." in page
    assert "Dialogue turn 3" in page
    assert "同事说“<mark>卧槽</mark>”，请幽默地回应。" in page
    assert 'data-item="clean"' not in page
    assert "<script>" not in page


def test_a_member_releases_an_item_and_the_page_lists_who_and_when(study, member):
    client = client_for(member)
    rude = item(study, "rude")
    response = client.post(url(study, "release"), {"item_id": str(rude.pk)})
    assert response.status_code == 302
    assert response["Location"] == url(study)
    rude.refresh_from_db()
    assert (rude.stage, rude.offense_released_by) == ("study", member)
    page = client.get(url(study)).content.decode()
    assert "rude was released" in page
    released = page.split("offense-released")[1]
    assert 'data-item="rude"' in released
    assert "member" in released


def test_a_rescan_from_the_page_holds_items_matching_a_new_term(study, owner):
    OffenseTerm.objects.create(language="en", term="cat", category="insult")
    client = client_for(owner)
    response = client.post(url(study, "rescan"))
    assert response.status_code == 302
    assert item(study, "clean").stage == "held"
    assert "4 are held" in client.get(url(study)).content.decode()


@pytest.mark.parametrize(
    ("item_id", "status"),
    [(None, 400), ("", 400), ("abc", 400), ("-3", 400), ("9" * 40, 400), ("999999", 404)],
)
def test_bad_release_input_is_refused_and_changes_nothing(study, owner, item_id, status):
    before = snapshot(study)
    data = {} if item_id is None else {"item_id": item_id}
    response = client_for(owner).post(url(study, "release"), data)
    assert response.status_code == status
    assert 'class="error"' in response.content.decode()
    assert snapshot(study) == before


def test_releasing_an_item_of_another_study_or_one_not_held_is_refused(study, owner, outsider):
    theirs = Item.objects.create(
        study=Study.objects.get(slug="theirs"), external_id="t", text="moron", source="x"
    )
    before = snapshot(study)
    client = client_for(owner)
    assert client.post(url(study, "release"), {"item_id": theirs.pk}).status_code == 404
    not_held = client.post(url(study, "release"), {"item_id": item(study, "clean").pk})
    assert not_held.status_code == 409
    assert "not held" in not_held.content.decode()
    assert snapshot(study) == before


def test_the_actions_take_only_posts(study, owner):
    client = client_for(owner)
    assert client.get(url(study, "rescan")).status_code == 405
    assert client.get(url(study, "release")).status_code == 405
    assert client.post(url(study)).status_code == 405


@pytest.mark.django_db
def test_an_item_added_or_rewritten_in_the_admin_passes_the_offense_filter(study, admin):
    client = client_for(admin)
    fields = {
        "study": study.pk,
        "external_id": "typed",
        "text": "A calm joke about cats.",
        "source": "x",
        "level": "single",
        "language": "en",
        "stage": "study",
        "context": "[]",
        "generation": "{}",
        "attention_expected": "{}",
    }
    response = client.post("/admin/studies/item/add/", fields)
    assert response.status_code == 302, response.content[:2000]
    added = item(study, "typed")
    assert added.stage == "study"
    response = client.post(
        f"/admin/studies/item/{added.pk}/change/",
        {**fields, "text": "A calm joke about a moron and cats."},
    )
    assert response.status_code == 302
    added.refresh_from_db()
    assert added.stage == "held"
    assert list(added.offense_matches.values_list("matched", flat=True)) == ["moron"]
