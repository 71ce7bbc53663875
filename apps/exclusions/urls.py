from __future__ import annotations

from django.urls import path

from apps.exclusions import views

app_name = "exclusions"

urlpatterns = [
    path("", views.page, name="page"),
    path("exclude/", views.exclude, name="exclude"),
    path("undo/", views.undo, name="undo"),
    path("proposals/confirm/", views.confirm, name="confirm"),
    path("proposals/dismiss/", views.dismiss, name="dismiss"),
    path("proposals/refresh/", views.refresh, name="refresh"),
]
