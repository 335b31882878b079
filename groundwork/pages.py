"""The landing page: signed-in users pick a tenant; everyone else is sent to sign in."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from .models import Membership


@login_required
def home(request):
    memberships = Membership.objects.select_related("tenant").filter(user=request.user).order_by("tenant__slug")
    return render(request, "home.html", {"memberships": memberships})
