"""factory_boy factories for every model; the study factory uses the built-in humor rubric."""

from __future__ import annotations

import uuid
from datetime import timedelta

import factory
from django.db.models import Max
from django.utils import timezone

from apps.assignments.models import Assignment
from apps.judgments.models import PairJudgment, ScoreAnswer, ScoreResponse, TuringJudgment
from apps.raters.models import DEFAULT_BACKGROUNDS, BackgroundGroup, Rater, RaterSession
from apps.studies.models import Item, Question, Rubric, Study


class StudyFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Study
        skip_postgeneration_save = True

    slug = factory.Sequence(lambda n: f"study-{n}")
    name = factory.LazyAttribute(lambda o: f"Study {o.slug}")
    rubric = factory.LazyFunction(lambda: Rubric.objects.get(slug="humor"))
    status = Study.Status.OPEN

    @factory.post_generation
    def backgrounds(self, create, extracted, **kwargs):  # type: ignore[no-untyped-def]
        if not create:
            return
        for position, (code, label) in enumerate(extracted or DEFAULT_BACKGROUNDS):
            BackgroundGroup.objects.create(study=self, code=code, label=label, position=position)


class ItemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Item

    study = factory.SubFactory(StudyFactory)
    external_id = factory.Sequence(lambda n: f"j{n:04d}")
    text = factory.Sequence(lambda n: f"Joke number {n}: why did the compiler cross the road?")
    source = "model-a"
    level = Item.Level.SINGLE
    humor_type = "pun"
    topic = "programmers"
    language = "en"


class RaterFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Rater

    study = factory.SubFactory(StudyFactory)
    external_id = factory.Sequence(lambda n: f"r{n:04d}")
    background = factory.LazyAttribute(
        lambda o: o.study.background_groups.order_by("position").first()
    )
    consent_at = factory.LazyFunction(timezone.now)


class RaterSessionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = RaterSession

    rater = factory.SubFactory(RaterFactory)
    started_at = factory.LazyFunction(timezone.now)
    deadline = factory.LazyAttribute(lambda o: o.started_at + timedelta(minutes=30))


class ScoreResponseFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ScoreResponse

    session = factory.SubFactory(RaterSessionFactory)
    rater = factory.SelfAttribute("session.rater")
    study = factory.SelfAttribute("rater.study")
    item = factory.SubFactory(ItemFactory, study=factory.SelfAttribute("..study"))
    idempotency_key = factory.LazyFunction(lambda: uuid.uuid4().hex)
    seconds_into_session = 10.0


class ScoreAnswerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ScoreAnswer

    response = factory.SubFactory(ScoreResponseFactory)
    question = factory.LazyAttribute(
        lambda o: Question.objects.get(rubric=o.response.study.rubric, name="surprise")
    )
    value = 3


class PairJudgmentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = PairJudgment

    session = factory.SubFactory(RaterSessionFactory)
    rater = factory.SelfAttribute("session.rater")
    study = factory.SelfAttribute("rater.study")
    left = factory.SubFactory(ItemFactory, study=factory.SelfAttribute("..study"))
    right = factory.SubFactory(ItemFactory, study=factory.SelfAttribute("..study"))
    winner = factory.SelfAttribute("left")
    outcome = factory.LazyAttribute(
        lambda o: "left" if o.winner == o.left else "right" if o.winner == o.right else "tie"
    )
    idempotency_key = factory.LazyFunction(lambda: uuid.uuid4().hex)


class TuringJudgmentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = TuringJudgment

    session = factory.SubFactory(RaterSessionFactory)
    rater = factory.SelfAttribute("session.rater")
    study = factory.SelfAttribute("rater.study")
    item = factory.SubFactory(ItemFactory, study=factory.SelfAttribute("..study"))
    guess = TuringJudgment.Guess.AI
    idempotency_key = factory.LazyFunction(lambda: uuid.uuid4().hex)


class AssignmentFactory(factory.django.DjangoModelFactory):
    """A task given to a rater, answered unless told otherwise, after the session's last one."""

    class Meta:
        model = Assignment

    session = factory.SubFactory(RaterSessionFactory)
    rater = factory.SelfAttribute("session.rater")
    study = factory.SelfAttribute("rater.study")
    kind = Assignment.Kind.SCORECARD
    status = Assignment.Status.DONE
    item = factory.SubFactory(ItemFactory, study=factory.SelfAttribute("..study"))
    position = factory.LazyAttribute(
        lambda o: (
            (Assignment.objects.filter(session=o.session).aggregate(m=Max("position"))["m"] or 0)
            + 1
        )
    )
