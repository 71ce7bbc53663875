"""Items with pictures: decoded and re-encoded without metadata, imported in a zip with the items
file (every line and picture checked first; a bad one stores nothing), stored through Django's
storage under their hash, and shown to the rater given the item, with its description in the
rater's language."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import pytest
from django.core.files.storage import default_storage
from django.test import Client
from PIL import Image

from apps.assignments.models import Assignment
from apps.core.errors import ImportRejected
from apps.studies.images import ImageRefused, image_prepare
from apps.studies.models import Item, Study
from apps.studies.services import study_items_import
from tests.factories import StudyFactory

pytestmark = pytest.mark.django_db

FORM = {"background": "technical", "age_band": "25-34", "consent": "on", "languages": ["en", "zh"]}


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = str(tmp_path / "media")


def _picture(kind: str = "PNG", size: tuple[int, int] = (64, 48), **save: Any) -> bytes:
    image = Image.new("RGB", size, (200, 120, 40))
    out = io.BytesIO()
    image.save(out, format=kind, **save)
    return out.getvalue()


def _with_exif() -> bytes:
    exif = Image.Exif()
    exif[0x010F] = "SecretCam"  # Make
    exif[0x8825] = {2: (51.0, 30.0, 0.0)}  # GPS latitude
    return _picture("JPEG", exif=exif.tobytes())


def test_a_picture_is_re_encoded_without_its_metadata() -> None:
    data = _with_exif()
    assert b"SecretCam" in data
    prepared = image_prepare(data)
    assert b"SecretCam" not in prepared.content
    with Image.open(io.BytesIO(prepared.content)) as image:
        assert image.format == "JPEG"
        assert image.size == (64, 48)
        assert not image.getexif()
    assert (prepared.extension, prepared.width, prepared.height) == ("jpg", 64, 48)
    assert prepared.storage_name == f"item-images/{prepared.sha256}.jpg"


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (_picture("GIF"), "not GIF"),
        (b"GIF89a but not really", "not a picture"),
        (b"\x89PNG\r\n\x1a\n" + b"\0" * 40, "not a picture"),
        (b"x" * (5 * 1024 * 1024 + 1), "larger than 5 MB"),
        (_picture("PNG", size=(4097, 2)), "at most 4096 a side"),
    ],
)
def test_what_is_not_a_picture_we_take_is_refused_saying_why(data: bytes, words: str) -> None:
    with pytest.raises(ImageRefused) as refused:
        image_prepare(data)
    assert words in str(refused.value)


def _zip(rows: list[dict[str, Any]], files: dict[str, bytes], name: str = "items.jsonl") -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr(name, "\n".join(json.dumps(row) for row in rows))
        for path, data in files.items():
            archive.writestr(path, data)
    return out.getvalue()


def _row(n: int, image: str | None = "pics/a.png", **extra: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"id": f"cap-{n}", "text": f"Caption {n}", "source": "m", "topic": "t"}
    if image:
        row["image_file"] = image
        row["image_alt"] = {"en": "A cat on a desk", "zh": "桌上的一只猫"}
    row.update(extra)
    return row


def test_a_zip_of_items_and_pictures_imports_each_picture_once_by_its_hash() -> None:
    study = StudyFactory()
    data = _zip(
        [_row(1), _row(2), _row(3, image="pics/b.webp"), _row(4, image=None)],
        {"pics/a.png": _picture("PNG"), "pics/b.webp": _picture("WEBP")},
    )
    summary = study_items_import(study=study, data=data, filename="cartoons.zip")
    assert summary.created == 4
    items = {item.external_id: item for item in Item.objects.filter(study=study)}
    assert items["cap-1"].image == items["cap-2"].image
    assert items["cap-1"].image.endswith(".png")
    assert items["cap-3"].image.endswith(".webp")
    assert items["cap-4"].image == ""
    assert items["cap-1"].image_alt == {"en": "A cat on a desk", "zh": "桌上的一只猫"}
    for item in (items["cap-1"], items["cap-3"]):
        assert default_storage.exists(item.image)
        assert item.image == f"item-images/{item.image_sha256}.{item.image.rsplit('.', 1)[1]}"
    # The same zip again changes nothing.
    again = study_items_import(study=study, data=data, filename="cartoons.zip")
    assert (again.created, again.unchanged) == (0, 4)


def test_a_bad_line_or_picture_refuses_the_zip_naming_each_and_stores_nothing() -> None:
    study = StudyFactory()
    data = _zip(
        [
            _row(1),
            _row(2, image="pics/missing.png"),
            _row(3, image="pics/bad.png"),
            {**_row(4), "image_alt": {}},
            _row(5, image="notes.txt"),
        ],
        {"pics/a.png": _picture(), "pics/bad.png": b"not a png", "notes.txt": b"hello"},
    )
    with pytest.raises(ImportRejected) as refused:
        study_items_import(study=study, data=data, filename="cartoons.zip")
    found = [(error.line, error.field) for error in refused.value.errors]
    assert found == [(2, "image_file"), (3, "image_file"), (4, "image_alt"), (5, "image_file")]
    assert "no file 'pics/missing.png'" in refused.value.errors[0].message
    assert not Item.objects.filter(study=study).exists()
    assert (
        not default_storage.exists("item-images") or not default_storage.listdir("item-images")[1]
    )


@pytest.mark.parametrize(
    ("data", "filename", "words"),
    [
        (b"PK not a zip", "x.zip", "not a zip file"),
        (None, "x.zip", "one items file"),
    ],
)
def test_a_zip_that_is_not_one_is_refused(data: bytes | None, filename: str, words: str) -> None:
    if data is None:
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as archive:
            archive.writestr("a.png", _picture())
        data = out.getvalue()
    with pytest.raises(ImportRejected) as refused:
        study_items_import(study=StudyFactory(), data=data, filename=filename)
    assert words in refused.value.errors[0].message


def test_a_picture_named_outside_a_zip_is_a_line_error() -> None:
    study = StudyFactory()
    data = json.dumps(_row(1)).encode()
    with pytest.raises(ImportRejected) as refused:
        study_items_import(study=study, data=data, filename="items.jsonl")
    assert [(e.line, e.field) for e in refused.value.errors] == [(1, "image_file")]
    assert "zip" in refused.value.errors[0].message


def _picture_study() -> Study:
    study = StudyFactory(task_mix={"scorecard": 1.0}, attention_check_rate=0, languages=["en"])
    data = _zip([_row(1), _row(2)], {"pics/a.png": _picture()})
    study_items_import(study=study, data=data, filename="cartoons.zip")
    return study


@pytest.mark.parametrize(
    ("language", "alt"), [("en", "A cat on a desk"), ("zh-hans", "桌上的一只猫")]
)
def test_the_rater_given_the_item_sees_its_picture_with_the_description(language, alt) -> None:
    study = _picture_study()
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    assert client.post(f"/s/{study.slug}/", FORM).status_code == 302
    page = client.get(f"/s/{study.slug}/task/").content.decode()
    item = Item.objects.get(pk=Assignment.objects.get(status="pending").item_id)
    name = item.image.rsplit("/", 1)[1]
    assert f'src="/s/{study.slug}/images/{name}"' in page
    assert f'alt="{alt}"' in page
    assert "pics/a.png" not in page
    picture = client.get(f"/s/{study.slug}/images/{name}")
    assert picture.status_code == 200
    assert picture["Content-Type"] == "image/png"
    assert b"".join(picture.streaming_content) == default_storage.open(item.image).read()
    # Nobody else gets it: another rater with no task showing it, a visitor, an unknown name.
    other = Client()
    other.post(f"/s/{study.slug}/", FORM)
    Assignment.objects.filter(rater__external_id__isnull=False).exclude(
        rater_id=client.session[f"laughlab:rater:{study.pk}"]
    ).delete()
    assert other.get(f"/s/{study.slug}/images/{name}").status_code == 404
    assert Client().get(f"/s/{study.slug}/images/{name}").status_code == 404
    assert client.get(f"/s/{study.slug}/images/{'0' * 64}.png").status_code == 404


@pytest.fixture
def researcher_api(django_user_model):  # type: ignore[no-untyped-def]
    """A study and an API client of a researcher who is one of its members."""
    from rest_framework.test import APIClient

    from apps.studies.services import study_member_add

    study = StudyFactory()
    user = django_user_model.objects.create_user("res", password="pw-res-12345")
    study_member_add(study=study, user=user)
    client = APIClient()
    client.force_authenticate(user)
    return study, client


def test_the_items_api_takes_the_zip_and_refuses_a_bad_one_naming_lines(researcher_api) -> None:
    study, client = researcher_api
    url = f"/api/v1/studies/{study.slug}/items/"
    bad = _zip([_row(1, image="pics/none.png")], {})
    refused = client.post(
        url,
        {"file": _named(bad, "bad.zip")},
        format="multipart",
    )
    assert refused.status_code == 400
    assert refused.json()["errors"][0]["field"] == "image_file"
    assert not Item.objects.filter(study=study).exists()
    good = _zip([_row(1), _row(2)], {"pics/a.png": _picture()})
    accepted = client.post(url, {"file": _named(good, "good.zip")}, format="multipart")
    assert accepted.status_code == 201
    assert Item.objects.filter(study=study).exclude(image="").count() == 2


def test_a_zip_too_large_for_the_request_is_imported_in_the_background(
    researcher_api, settings, django_capture_on_commit_callbacks
) -> None:
    study, client = researcher_api
    good = _zip([_row(1), _row(2)], {"pics/a.png": _picture()})
    settings.IMPORT_INLINE_MAX_BYTES = len(good) - 1
    with django_capture_on_commit_callbacks(execute=True):
        accepted = client.post(
            f"/api/v1/studies/{study.slug}/items/",
            {"file": _named(good, "good.zip")},
            format="multipart",
        )
    assert accepted.status_code == 202
    job = client.get(accepted.headers["Location"]).json()
    assert job["status"] == "done", job
    assert Item.objects.filter(study=study).exclude(image="").count() == 2


def test_the_judgments_api_refuses_a_zip_naming_its_type(researcher_api) -> None:
    from apps.judgments.models import ScoreResponse

    study, client = researcher_api
    upload = _named(_zip([_row(1)], {"pics/a.png": _picture()}), "judgments.zip")
    refused = client.post(
        f"/api/v1/studies/{study.slug}/judgments/", {"file": upload}, format="multipart"
    )
    assert refused.status_code == 400
    assert "'.zip'" in refused.json()["errors"][0]["message"]
    assert not ScoreResponse.objects.filter(study=study).exists()


def _named(data: bytes, name: str) -> Any:
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, data, content_type="application/zip")


def test_the_results_exports_carry_each_pictures_storage_name_and_hash() -> None:
    from apps.analysis.exports import result_document
    from apps.analysis.services import study_aggregate
    from apps.reports.tables import items_table

    study = StudyFactory()
    data = _zip([_row(1), _row(2, image=None)], {"pics/a.png": _picture()})
    study_items_import(study=study, data=data, filename="cartoons.zip")
    document = result_document(study_aggregate(study=study, rounds=20))
    table = items_table(document)
    rows = {row[0]: dict(zip(table.columns, row, strict=True)) for row in table.rows}
    pictured = Item.objects.get(study=study, external_id="cap-1")
    assert rows["cap-1"]["image"] == pictured.image
    assert rows["cap-1"]["image_sha256"] == pictured.image_sha256
    assert rows["cap-2"]["image"] == ""
    assert table.columns.index("image") < table.columns.index("meta")


def test_the_import_command_takes_the_zip_and_names_a_bad_line(tmp_path) -> None:
    from django.core.management import CommandError, call_command

    study = StudyFactory()
    bad = tmp_path / "bad.zip"
    bad.write_bytes(_zip([_row(1, image="pics/gone.png")], {}))
    with pytest.raises(CommandError) as refused:
        call_command("import_items", study.slug, str(bad))
    assert "line 1" in str(refused.value)
    assert "image_file" in str(refused.value)
    good = tmp_path / "good.zip"
    good.write_bytes(_zip([_row(1)], {"pics/a.png": _picture()}))
    call_command("import_items", study.slug, str(good), stdout=io.StringIO())
    assert Item.objects.get(study=study).image.endswith(".png")


def test_two_captions_of_one_picture_show_it_once_above_the_pair() -> None:
    study = StudyFactory(task_mix={"pair": 1.0}, attention_check_rate=0, languages=["en"])
    data = _zip([_row(1), _row(2)], {"pics/a.png": _picture()})
    study_items_import(study=study, data=data, filename="cartoons.zip")
    client = Client()
    assert client.post(f"/s/{study.slug}/", FORM).status_code == 302
    page = client.get(f"/s/{study.slug}/task/").content.decode()
    assert 'data-task="pair"' in page
    assert page.count("<img ") == 1
    assert 'class="item-image shared"' in page
