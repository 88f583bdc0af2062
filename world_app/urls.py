app_name = "world"

urlpatterns: list = []
