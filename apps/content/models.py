"""Evaluating generated articles: automatic L1 metrics per item, the composite's weights per
content type, and the stored evaluation (independence of the dimensions, tiers against humans).

Like screening, nothing here is human evidence: it is all recomputed from items and judgments.
"""

from __future__ import annotations

from django.db import models

from apps.studies.models import Item, Study


class ContentMetrics(models.Model):
    """The L1 metrics of one item: {name: value}; a metric that cannot be computed is absent
    from `values` and present in `missing` with the reason."""

    item = models.OneToOneField(Item, on_delete=models.CASCADE, related_name="content_metrics")
    values = models.JSONField(default=dict)
    missing = models.JSONField(default=dict, blank=True)
    # How the text was cut into words ("jieba 0.42.1", "regex words") and sentences.
    tokenizer = models.CharField(max_length=100, blank=True)
    # Which model computed a model-based metric: {"semantic_novelty": "<model label>"}.
    models_used = models.JSONField(default=dict, blank=True)
    computed_at = models.DateTimeField()

    class Meta:
        verbose_name_plural = "content metrics"

    def __str__(self) -> str:
        return f"metrics of {self.item_id}"


class ContentWeights(models.Model):
    """Composite = w_f·fluency + w_i·informativeness + w_o·originality for one content type."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="content_weights")
    content_type = models.CharField(max_length=16)
    fluency = models.FloatField()
    informativeness = models.FloatField()
    originality = models.FloatField()
    # True for the documented defaults (news 0.4/0.4/0.2, analysis 0.25/0.5/0.25,
    # creative 0.2/0.2/0.6), used before any fit.
    is_default = models.BooleanField(default=False)
    method = models.CharField(max_length=50, blank=True)
    n_items = models.PositiveIntegerField(default=0)
    # The fit's quality: {"log_likelihood": ..., "pseudo_r2": ..., "cv_accuracy": ..., ...}.
    quality = models.JSONField(default=dict, blank=True)
    data_hash = models.CharField(max_length=64, blank=True)
    seed = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "content_type", "-created_at"]

    def __str__(self) -> str:
        return f"weights for {self.content_type} in {self.study_id}"


class ContentEvaluation(models.Model):
    """The study's stored evaluation, read by the dashboard; replaced as a whole on recompute."""

    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="content_evaluation")
    # {"independence": {"human": ..., "automatic": ...}, "metric_vs_human": ..., "tiers": ...}
    payload = models.JSONField()
    seed = models.BigIntegerField()
    rounds = models.PositiveIntegerField()
    input_hash = models.CharField(max_length=64)
    computed_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"content evaluation of {self.study_id}"
