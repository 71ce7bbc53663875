from __future__ import annotations

from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from apps.assignments import views as task_views
from apps.core import health
from apps.core.auth import ThrottledAdminAuthenticationForm, ThrottledLoginView
from apps.judgments import api as judgment_api
from apps.raters import views as rater_views
from config import metrics

admin.site.site_header = "LaughLab administration"
admin.site.site_title = "LaughLab"
admin.site.login_form = ThrottledAdminAuthenticationForm

rater_patterns = [
    path("", rater_views.study_entry, name="entry"),
    path("task/", task_views.task_page, name="task"),
    path("end/", rater_views.session_end, name="end"),
    path("return/", rater_views.session_return, name="return"),
    path("images/<str:name>", rater_views.item_image, name="item_image"),
]

rater_api_patterns = [
    path("scorecards", judgment_api.ScorecardSubmitApi.as_view(), name="scorecards"),
    path("scorecards/early", judgment_api.EarlyAnswersApi.as_view(), name="scorecards-early"),
    path("pairs", judgment_api.PairSubmitApi.as_view(), name="pairs"),
    path("turing", judgment_api.TuringSubmitApi.as_view(), name="turing"),
    path("explanations", judgment_api.ExplanationSubmitApi.as_view(), name="explanations"),
]

# Database failures anywhere (a middleware, the session) are the same retryable 503 as in a view.
handler500 = "apps.core.views.server_error"

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics.metrics_view, name="metrics"),
    path("", RedirectView.as_view(pattern_name="dashboard:study_list", permanent=False)),
    path("admin/", admin.site.urls),
    path("accounts/login/", ThrottledLoginView.as_view(), name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("account/", include("apps.accounts.urls")),
    path("studies/", include("apps.dashboard.urls")),
    path("studies/<slug:slug>/exports/", include("apps.reports.urls")),
    path("studies/<slug:slug>/screening/", include("apps.screening.urls")),
    path("studies/<slug:slug>/exclusions/", include("apps.exclusions.urls")),
    path("studies/<slug:slug>/content/", include("apps.content.urls")),
    path("studies/<slug:slug>/generation/", include("apps.generation.urls")),
    path("i18n/", include("django.conf.urls.i18n")),
    path("s/<slug:slug>/", include((rater_patterns, "raters"))),
    path("api/v1/rater/<slug:slug>/", include((rater_api_patterns, "rater_api"))),
    path("api/v1/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/v1/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("api/v1/", include("apps.api.urls")),
]
