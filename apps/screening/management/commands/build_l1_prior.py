"""`manage.py build_l1_prior CSV`: build the shipped L1 prior from Humicroedit's ratings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.screening import prior as prior_module
from apps.textmodels.registry import ModelUnavailable, embedder


class Command(BaseCommand):
    help = (
        "Train the L1 prior (ridge on multilingual sentence embeddings) on a Humicroedit CSV "
        "(id,original,edit,grades,meanGrade), measure it on a seeded held-out fifth and write it "
        f"(default: {prior_module.PRIOR_PATH})."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "csv", help="Humicroedit task-1 CSV, e.g. shared/reference/humicroedit/task-1_train.csv"
        )
        parser.add_argument("--out", default=str(prior_module.PRIOR_PATH))
        parser.add_argument("--seed", type=int, default=20190601)

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["csv"])
        if not path.is_file():
            raise CommandError(f"csv: no file at {path}")
        try:
            rows = prior_module.read_humicroedit(path)
        except (ValueError, UnicodeDecodeError) as exc:
            raise CommandError(f"csv {path}: {exc}") from None
        if len(rows) < 100:
            raise CommandError(f"csv {path}: {len(rows)} headlines; the prior needs at least 100")
        try:
            encoder = embedder()
        except ModelUnavailable as exc:
            raise CommandError(f"embedding model: {exc}") from None
        embeddings = encoder.encode([row.text for row in rows])
        originals = encoder.encode([row.original for row in rows])
        built = prior_module.build_prior(
            rows,
            embeddings,
            originals,
            embedding_model=encoder.info.short_name,
            seed=int(options["seed"]),
        )
        prior_module.write_prior(built, options["out"])
        rho = built.quality["rho"]
        kept = built.quality["top_quartile_kept"]
        self.stdout.write(
            f"prior {built.version}: trained on {built.n_train} headlines, measured on "
            f"{built.n_holdout} held out: rho {rho['value']:.3f} [{rho['ci_low']:.3f}, "
            f"{rho['ci_high']:.3f}], top quartile kept by a top-half sieve {kept['value']:.1%} "
            f"[{kept['ci_low']:.1%}, {kept['ci_high']:.1%}], RMSE {built.quality['rmse']:.3f} "
            f"(training mean: {built.quality['rmse_mean_baseline']:.3f}); above its own original "
            f"{built.quality['above_original']:.1%}; written to {options['out']}"
        )
