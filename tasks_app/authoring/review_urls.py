"""Review pages: the queue, claims, decisions, comments, the author's own queue."""

from django.urls import path

from tasks_app.authoring.views import review, review_queue, second_review

app_name = "review"

urlpatterns = [
    path("", review_queue.queue, name="queue"),
    path("mine/", review_queue.mine, name="mine"),
    path("next/", review_queue.next_item, name="next"),
    path("claim-next/", review_queue.claim_next, name="claim_next"),
    path("bulk/", review_queue.bulk_decide, name="bulk"),
    path("filters/", review_queue.filter_save, name="filter_save"),
    path("filters/<int:filter_id>/delete/", review_queue.filter_delete, name="filter_delete"),
    path("tasks/<int:task_id>/", review.task_page, name="task"),
    path("tasks/<int:task_id>/claim/", review.claim, name="claim"),
    path("tasks/<int:task_id>/release/", review.release, name="release"),
    path("tasks/<int:task_id>/decide/", review.decide, name="decide"),
    path("tasks/<int:task_id>/second-review/", second_review.second_review, name="second_review"),
    path("tasks/<int:task_id>/gate/", review.gate_check, name="gate"),
    path("tasks/<int:task_id>/comments/", review.comment_create, name="comment"),
    path("tasks/<int:task_id>/diff/<int:a>/<int:b>/", review.diff, name="diff"),
    path("comments/<int:comment_id>/resolve/", review.comment_resolve_view, name="comment_resolve"),
]
