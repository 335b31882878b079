api_urlpatterns: list = []
page_urlpatterns: list = []
