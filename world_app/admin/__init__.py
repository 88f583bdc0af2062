"""The live world in the Django admin: every world table browsable, searchable, filterable and editable.

Experts edit the live world here; every save runs the models' validation, and actions call services.
"""

from django.contrib import admin

from world_app.admin import catalog, commerce, episodes, people, support, warranty  # noqa: F401 - registers

admin.site.site_header = "Corecraft Studio — live world"
admin.site.site_title = "Corecraft Studio"
admin.site.index_title = "Live world"
