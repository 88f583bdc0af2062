"""Search tool for the knowledge base (``search_knowledge_base``): policies, guides, manuals, FAQs, procedures."""

from __future__ import annotations

from typing import Literal

from django.db.models import Case, IntegerField, Q, QuerySet, Value, When
from pydantic import Field

from world_app.models import ArticleKind, KnowledgeBaseArticle, ProductCategory
from world_app.tools.params import EntityId, PageParams, SearchText, WorldTime, after_field, before_field
from world_app.tools.records import article_record
from world_app.tools.registry import tool
from world_app.tools.search.base import BakedSearch, choice_values, exact_filters, range_filter, text_filter


class SearchKnowledgeBaseParams(PageParams):
    query: SearchText | None = Field(
        None, description="Words to find in the article's title, body, slug or tags, e.g. 'return window'."
    )
    kind: Literal[choice_values(ArticleKind)] | None = Field(
        None, description="Only this kind: policy, troubleshooting, manual, faq or procedure."
    )
    product_category: Literal[choice_values(ProductCategory)] | None = Field(
        None, description="Only articles about this product category."
    )
    product_id: EntityId | None = Field(None, description="Only articles about this product (e.g. its manual).")
    tag: str | None = Field(None, max_length=60, description="Only articles with this tag.")
    include_unpublished: bool = Field(False, description="Also return drafts and retired articles.")
    updated_after: WorldTime | None = after_field("articles last updated")
    updated_before: WorldTime | None = before_field("articles last updated")
    sort: Literal["relevance", "id", "title"] = Field(
        "relevance", description="Order of results: relevance (all words in the title first), id or title."
    )


@tool(group="search", params=SearchKnowledgeBaseParams)
def search_knowledge_base(p: SearchKnowledgeBaseParams) -> dict:
    """Search the knowledge base: policies (returns, refunds, warranty, shipping, loyalty), troubleshooting
    guides, product manuals, FAQs and procedures.

    Returns a page of articles with their full text. Policies state the rules the write tools enforce; read them
    before promising a customer anything.
    """
    return ARTICLE_SEARCH.page(p, article_record)


def _articles(p: SearchKnowledgeBaseParams) -> QuerySet:
    condition = (
        text_filter(p.query, ("id", "title", "body", "slug", "tags"))
        & range_filter("updated_at", p.updated_after, p.updated_before)
        & exact_filters(kind=p.kind, product_category=p.product_category, product_id=p.product_id)
    )
    if not p.include_unpublished:
        condition &= Q(is_published=True)
    if p.tag:
        condition &= Q(tags__icontains=f'"{p.tag}"')
    queryset = KnowledgeBaseArticle.objects.filter(condition)
    if p.sort == "relevance" and p.query:
        in_title = text_filter(p.query, ("title",))
        rank = Case(When(in_title, then=Value(0)), default=Value(1), output_field=IntegerField())
        queryset = queryset.order_by(rank.asc(), "id")
    else:
        queryset = queryset.order_by(*({"title": ("title", "id")}.get(p.sort, ("id",))))
    return queryset


ARTICLE_SEARCH = BakedSearch(
    KnowledgeBaseArticle,
    SearchKnowledgeBaseParams,
    _articles,
    values=("product_id",),
    unbaked=("tag", "updated_after", "updated_before"),
)
