from __future__ import annotations

from django.contrib import admin
from django.urls import path

admin.site.site_header = "LaughLab administration"
admin.site.site_title = "LaughLab"

urlpatterns = [
    path("admin/", admin.site.urls),
]
