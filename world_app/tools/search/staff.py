"""Search tool for the store's employees (``search_employees``): who may approve, resolve or take an escalation."""

from __future__ import annotations

from typing import Literal

from django.db.models import Q, QuerySet
from pydantic import Field

from world_app.models import Department, Employee, SupportRole
from world_app.models.people import EMPLOYEE_PERMISSIONS
from world_app.tools.params import EntityId, PageParams, SearchText, WorldTime, after_field, before_field
from world_app.tools.records import employee_record
from world_app.tools.registry import tool
from world_app.tools.search.base import BakedSearch, choice_values, exact_filters, range_filter, text_filter


class SearchEmployeesParams(PageParams):
    query: SearchText | None = Field(None, description="Words to find in the employee's id, name, email or title.")
    department: Literal[choice_values(Department)] | None = Field(None, description="Only this department.")
    support_role: Literal[choice_values(SupportRole)] | None = Field(None, description="Only this support role.")
    manager_id: EntityId | None = Field(None, description="Only employees reporting to this manager.")
    permission: Literal[EMPLOYEE_PERMISSIONS] | None = Field(
        None, description="Only employees holding this permission (e.g. approve_refunds_over_limit)."
    )
    is_active: bool | None = Field(None, description="true: only current employees; false: only former ones.")
    hired_after: WorldTime | None = after_field("employees hired")
    hired_before: WorldTime | None = before_field("employees hired")
    sort: Literal["id", "name"] = Field("id", description="Order of results: id, or name (last then first).")


EMPLOYEE_SORTS = {"id": ("id",), "name": ("last_name", "first_name", "id")}


@tool(group="search", params=SearchEmployeesParams)
def search_employees(p: SearchEmployeesParams) -> dict:
    """Find employees by name, department, support role, manager, permission or hire date.

    Use it to find who may resolve a ticket, who approves refunds over the limit (a team lead), or where an
    escalation should go. Returns a page of employees with title, department, manager, role and permissions.
    """
    return EMPLOYEE_SEARCH.page(p, employee_record)


def _employees(p: SearchEmployeesParams) -> QuerySet:
    condition = (
        text_filter(p.query, ("id", "first_name", "last_name", "email", "title"))
        & range_filter("hired_on", p.hired_after, p.hired_before, dates=True)
        & exact_filters(
            department=p.department, support_role=p.support_role, manager_id=p.manager_id, is_active=p.is_active
        )
    )
    if p.permission:
        condition &= Q(permissions__icontains=f'"{p.permission}"')
    return Employee.objects.filter(condition).order_by(*EMPLOYEE_SORTS[p.sort])


EMPLOYEE_SEARCH = BakedSearch(
    Employee,
    SearchEmployeesParams,
    _employees,
    # Department and role are compared with exact: query values, not a compiled form per choice.
    values=("manager_id", "department", "support_role"),
    unbaked=("hired_after", "hired_before"),
)
