"""Baked queries: a queryset compiled to SQL once per database, then run again with new values.

Django compiles a queryset to SQL on every run. For the small look-ups a tool makes (one order, its lines,
their payments) that compile is most of the time: 0.3-0.8 ms of Python against 0.02 ms for SQLite to answer.
A baked query is built once per database and shape with stand-in values; its SQL, the place of each value in
its parameters and the column converters are kept, and each call runs that SQL with the real values and makes
the same model instances the ORM would (``Model.from_db`` after the same converters). SQLAlchemy's baked
queries do the same.

What may vary between calls: the string values of look-ups that pass them through unchanged (``exact``,
``in``, ``gte``...), of ``contains`` and ``icontains`` (rewritten at each call as Django does:
``%value%`` with ``%``, ``_`` and ``\\`` escaped; not ``iexact`` or ``startswith``), and whether a value is None
(the build may then leave its filter out). An ``in`` list is padded to a power of two by repeating its last item,
so a few compiled forms serve every length. Anything else that changes the SQL (a date, a slice) is
``shape``: a keyword argument of the call, passed to ``build`` and part of the cache key.

``count(*values, **shape)`` answers how many rows the same query has (its ordering dropped), baked the same way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from django.core.exceptions import EmptyResultSet, ImproperlyConfigured
from django.db import DatabaseError, connections, router
from django.db.backends.sqlite3.base import FORMAT_QMARK_REGEX
from django.db.backends.sqlite3.operations import DatabaseOperations as SQLiteOperations
from django.db.models import Model, QuerySet, signals
from django.db.models.base import ModelState

M = TypeVar("M", bound=Model)
# A stand-in can never be a real value: real ones come from JSON the log could store (no NUL).
_MARK = "\x00baked\x00"
Value = str | Sequence[str] | None
# A parameter that is a stand-in as given, or as contains/icontains wrap it (``%stand-in%``).
_SLOT = re.compile(f"(?P<open>%?){re.escape(_MARK)}(?P<index>[0-9]+):(?P<position>None|[0-9]+)(?P<close>%?)")


@dataclass(frozen=True)
class _Statement:
    sql: str
    # Per parameter: (index of the value, position in it or None for a string, whether it is a ``contains``
    # pattern), or (None, the constant, False).
    slots: tuple[tuple[int | None, Any, bool], ...]
    field_names: tuple[str, ...]
    converters: tuple[tuple[int, tuple[Callable, ...], Any], ...]
    # SQLite only: the SQL as sqlite3 takes it (what Django's cursor makes of ``sql`` on every call), and whether
    # a row's columns are the model's concrete fields in order (its instance can then be made without __init__).
    qmark_sql: str | None = None
    whole_rows: bool = False


def _stand_in(index: int, position: int | None) -> str:
    return f"{_MARK}{index}:{position}"


def _stand_ins(values: tuple[Value, ...]) -> list[Value]:
    out: list[Value] = []
    for index, value in enumerate(values):
        if value is None:
            out.append(None)
        elif isinstance(value, str):
            out.append(_stand_in(index, None))
        else:
            out.append([_stand_in(index, position) for position in range(len(value))])
    return out


def _padded(value: Value) -> Value:
    """An ``in`` list grown to the next power of two by repeating its last item (same rows, few compiled forms)."""
    if value is None or isinstance(value, str) or not value:
        return value
    size = 1 << (len(value) - 1).bit_length()
    return [*value, *[value[-1]] * (size - len(value))]


def _value_shape(value: Value) -> int | str:
    if value is None:
        return "none"
    if isinstance(value, str):
        return "one"
    return len(value)


class BakedQuery(Generic[M]):
    """``build(*values, **shape)`` -> the queryset; calling the baked query returns its rows as model instances."""

    def __init__(self, model: type[M], build: Callable[..., QuerySet[M]]) -> None:
        self.model = model
        self._build = build
        self._statements: dict[Hashable, _Statement | None] = {}

    def __call__(self, *values: Value, **shape: Hashable) -> list[M]:
        db = router.db_for_read(self.model)
        values = tuple(_padded(v) for v in values)
        statement = self._statement(db, values, shape, count=False)
        if statement is None:
            return []  # compiles to nothing, e.g. an empty ``in`` list
        connection = connections[db]
        params = _params(statement, values, connection)
        raw = _raw_sqlite(connection, statement)
        if raw is not None:
            with connection.wrap_database_errors:
                rows = raw.execute(statement.qmark_sql, params).fetchall()
        else:
            with connection.cursor() as cursor:
                cursor.execute(statement.sql, params)
                rows = cursor.fetchall()
        converters = statement.converters
        fast = statement.whole_rows and not (
            signals.pre_init.has_listeners(self.model) or signals.post_init.has_listeners(self.model)
        )
        instances = []
        for row in rows:
            if converters:
                row = list(row)
                for position, functions, expression in converters:
                    value = row[position]
                    for convert in functions:
                        value = convert(value, expression, connection)
                    row[position] = value
            instances.append(
                _instance(self.model, db, statement.field_names, row)
                if fast
                else self.model.from_db(db, statement.field_names, row)
            )
        return instances

    def count(self, *values: Value, **shape: Hashable) -> int:
        """How many rows the query has: ``len(self(...))`` without loading them."""
        db = router.db_for_read(self.model)
        values = tuple(_padded(v) for v in values)
        statement = self._statement(db, values, shape, count=True)
        if statement is None:
            return 0
        connection = connections[db]
        params = _params(statement, values, connection)
        raw = _raw_sqlite(connection, statement)
        if raw is not None:
            with connection.wrap_database_errors:
                return raw.execute(statement.qmark_sql, params).fetchone()[0]
        with connection.cursor() as cursor:
            cursor.execute(statement.sql, params)
            return cursor.fetchone()[0]

    def _statement(self, db: str, values: tuple[Value, ...], shape: dict, *, count: bool) -> _Statement | None:
        key = (db, count, tuple(_value_shape(v) for v in values), tuple(sorted(shape.items())))
        try:
            return self._statements[key]
        except KeyError:
            statement = self._statements[key] = self._bake(db, values, shape, count=count)
            return statement

    def _bake(self, db: str, values: tuple[Value, ...], shape: dict, *, count: bool) -> _Statement | None:
        for value in values:
            if value is not None and not isinstance(value, str) and not all(isinstance(v, str) for v in value):
                raise ImproperlyConfigured(f"baked {self.model.__name__} query: values are strings or lists of them")
        queryset = self._build(*_stand_ins(values), **shape)
        if queryset.model is not self.model or queryset.query.select_related:
            raise ImproperlyConfigured(f"baked {self.model.__name__} query: one model, no select_related")
        if count:
            queryset = queryset.order_by()  # a count needs no order, as in QuerySet.count()
        compiler = queryset.query.get_compiler(using=db)
        try:
            sql, params = compiler.as_sql()
        except EmptyResultSet:
            return None
        slots = []
        for param in params:
            found = _SLOT.fullmatch(param) if isinstance(param, str) else None
            if found and found["open"] == found["close"]:
                position = found["position"]
                slots.append((int(found["index"]), None if position == "None" else int(position), bool(found["open"])))
            elif isinstance(param, str) and _MARK in param:
                raise ImproperlyConfigured(
                    f"baked {self.model.__name__} query: a value was rewritten ({param!r}); bake exact and in look-ups"
                )
            else:
                slots.append((None, param, False))
        qmark = _qmark if connections[db].vendor == "sqlite" else lambda _sql: None
        if count:
            # The rows as a subquery: the same WHERE (and LIMIT, if any) the rows have, on both databases.
            counted = f"SELECT COUNT(*) FROM ({sql}) counted"  # noqa: S608 (Django's SQL; values stay parameters)
            return _Statement(sql=counted, slots=tuple(slots), field_names=(), converters=(), qmark_sql=qmark(counted))
        columns = compiler.select[: compiler.col_count]
        if compiler.annotation_col_map or any(not hasattr(col[0], "target") for col in columns):
            raise ImproperlyConfigured(f"baked {self.model.__name__} query: model columns only")
        converters = {
            position: ([_faster(convert) for convert in functions], expression)
            for position, (functions, expression) in compiler.get_converters([col[0] for col in columns]).items()
        }
        field_names = tuple(col[0].target.attname for col in columns)
        return _Statement(
            sql=sql,
            slots=tuple(slots),
            field_names=field_names,
            converters=tuple((pos, tuple(functions), expr) for pos, (functions, expr) in converters.items()),
            qmark_sql=qmark(sql),
            whole_rows=field_names == tuple(f.attname for f in self.model._meta.concrete_fields),
        )


def _sqlite_datetime(value: Any, expression: Any, connection: Any) -> Any:
    """Django's SQLite ``convert_datetimefield_value`` for what it nearly always gets, a naive datetime sqlite3
    parsed already (the declared type): made aware in the connection's zone, as ``timezone.make_aware`` does, without
    its calls (the most frequent converter of the tools' rows). Anything else goes to Django's own. The
    connection's zone stands for ``settings.USE_TZ`` (a lazy settings look-up per value): it is None without it."""
    if value.__class__ is datetime and value.tzinfo is None:
        zone = connection.timezone
        if zone is not None:
            return value.replace(tzinfo=zone)
    return connection.ops.convert_datetimefield_value(value, expression, connection)


def _faster(convert: Callable) -> Callable:
    """``convert``, or a faster function of the same result."""
    if getattr(convert, "__func__", None) is SQLiteOperations.convert_datetimefield_value:
        return _sqlite_datetime
    return convert


def _qmark(sql: str) -> str:
    """What Django's SQLite cursor makes of ``sql`` with a list of parameters: ``%s`` becomes ``?``."""
    return FORMAT_QMARK_REGEX.sub("?", sql).replace("%%", "%")


def _raw_sqlite(connection, statement: _Statement):
    """The sqlite3 connection to run ``statement`` on directly, skipping Django's cursor (its wrappers, the
    query conversion, the debug log: two thirds of a primary-key look-up); None when Django's cursor must run it
    (another database, no connection yet, a query log or an execute wrapper is listening)."""
    if statement.qmark_sql is None or connection.execute_wrappers or connection.queries_logged:
        return None
    raw = connection.connection
    if raw is None:
        return None
    connection.validate_no_broken_transaction()
    return raw


def _instance(model: type[M], db: str, field_names: tuple[str, ...], row: Sequence) -> M:
    """What ``model.from_db(db, field_names, row)`` makes of a row of every concrete field in order, without
    ``Model.__init__``'s per-field ``setattr`` (no init signals listen: the caller checks)."""
    instance = model.__new__(model)
    state = instance._state = ModelState()
    state.adding, state.db = False, db
    instance.__dict__.update(zip(field_names, row, strict=True))
    return instance


def _params(statement: _Statement, values: tuple[Value, ...], connection) -> list:
    params = []
    for index, at, like in statement.slots:
        if index is None:
            params.append(at)
            continue
        value = values[index] if at is None else values[index][at]
        # What PatternLookup.process_rhs makes of a contains value, on every backend.
        params.append(f"%{connection.ops.prep_for_like_query(value)}%" if like else value)
    return params


@dataclass(frozen=True)
class _Update:
    sql: str
    fields: tuple  # the model fields SET, in order
    # The fields ``Model._prepare_related_fields_for_save`` has to look at (None: let it look at all of them).
    # Empty: none of them is a relation, and the model has no private (generic) relations: nothing to check.
    related: tuple | None = None


_UPDATES: dict[tuple[type[Model], tuple[str, ...]], _Update | None] = {}


def _raw_sqlite_for_save(connection, model: type[Model]) -> Any | None:
    """The sqlite3 connection a baked UPDATE or INSERT of ``model`` may run on directly; None when the ORM's save
    must run it (another database, no connection yet, a query log or an execute wrapper listening, save signals)."""
    raw = connection.connection
    if (
        connection.vendor != "sqlite"
        or raw is None
        or connection.execute_wrappers
        or connection.queries_logged
        or signals.pre_save.has_listeners(model)
        or signals.post_save.has_listeners(model)
    ):
        return None
    return raw


def save_fields(instance: Model, update_fields: Sequence[str]) -> None:
    """``instance.save(update_fields=update_fields)``, with its UPDATE made once per model and field list on the
    episode's SQLite (Django compiles it on every save: most of a write tool's status change).

    The same statement and values as the ORM's: each value through its field's ``get_db_prep_save``, the row
    by its primary key, an error when no row was updated. Anywhere else (Postgres, an execute wrapper or query
    log listening, save signals, a field that sets itself on save) it is the ORM's save.
    """
    model = type(instance)
    db = router.db_for_write(model, instance=instance)
    connection = connections[db]
    key = (model, tuple(update_fields))
    if key not in _UPDATES:
        _UPDATES[key] = _update_bake(model, key[1])
    update = _UPDATES[key]
    raw = _raw_sqlite_for_save(connection, model)
    if update is None or raw is None:
        instance.save(update_fields=update_fields)
        return
    if update.related is None or update.related:
        instance._prepare_related_fields_for_save(operation_name="save", fields=update.related or update.fields)
    params = [field.get_db_prep_save(getattr(instance, field.attname), connection) for field in update.fields]
    params.append(model._meta.pk.get_db_prep_value(instance.pk, connection))
    connection.validate_no_broken_transaction()
    with connection.wrap_database_errors:
        updated = raw.execute(update.sql, params).rowcount
    if not updated:
        raise DatabaseError("Save with update_fields did not affect any rows.")
    instance._state.adding, instance._state.db = False, db


def _update_bake(model: type[Model], names: tuple[str, ...]) -> _Update | None:
    fields = tuple(model._meta.get_field(name) for name in names)
    if not fields or any(
        not field.concrete or field.primary_key or getattr(field, "auto_now", False) for field in fields
    ):
        return None  # the ORM's save says what is wrong, or sets the field itself
    table, pk = model._meta.db_table, model._meta.pk.column
    assignments = ", ".join(f'"{field.column}" = ?' for field in fields)
    return _Update(
        sql=f'UPDATE "{table}" SET {assignments} WHERE "{pk}" = ?',  # noqa: S608
        fields=fields,
        related=_related_to_check(model, fields),
    )


def _related_to_check(model: type[Model], fields: tuple) -> tuple | None:
    """What ``_prepare_related_fields_for_save`` checks of a save of ``fields``: it looks only at relations, so
    the relations among them (empty: nothing to check); None, all of them, when the model has generic relations."""
    if model._meta.private_fields:
        return None
    return tuple(field for field in fields if field.is_relation)


_INSERTS: dict[type[Model], _Update | None] = {}


def create_row(model: type[M], **values: Any) -> M:
    """``model.objects.create(**values)``, with its INSERT made once per model on the episode's SQLite (the same
    instance, and each value through its field's ``pre_save`` and ``get_db_prep_save`` as the ORM's insert does);
    anywhere else, with save signals, or without an id given, it is the ORM's create."""
    instance = model(**values)
    db = router.db_for_write(model, instance=instance)
    connection = connections[db]
    if model not in _INSERTS:
        _INSERTS[model] = _insert_bake(model)
    insert = _INSERTS[model]
    raw = _raw_sqlite_for_save(connection, model)
    if insert is None or not instance.pk or raw is None:
        instance.save(force_insert=True, using=db)
        return instance
    if insert.related is None or insert.related:
        instance._prepare_related_fields_for_save(operation_name="save", fields=insert.related)
    params = [field.get_db_prep_save(field.pre_save(instance, True), connection) for field in insert.fields]
    connection.validate_no_broken_transaction()
    with connection.wrap_database_errors:
        raw.execute(insert.sql, params)
    instance._state.adding, instance._state.db = False, db
    return instance


def _insert_bake(model: type[Model]) -> _Update | None:
    meta = model._meta
    fields = tuple(meta.local_concrete_fields)
    if meta.parents or any(
        getattr(field, "auto_now", False)
        or getattr(field, "auto_now_add", False)
        or field.db_returning
        or field.has_db_default()
        for field in fields
    ):
        return None  # the ORM's insert fills or returns something itself
    columns = ", ".join(f'"{field.column}"' for field in fields)
    placeholders = ", ".join("?" * len(fields))
    return _Update(
        sql=f'INSERT INTO "{meta.db_table}" ({columns}) VALUES ({placeholders})',  # noqa: S608
        fields=fields,
        related=_related_to_check(model, tuple(meta.concrete_fields)),
    )
