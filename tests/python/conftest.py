import pyarrow as pa
import pytest

import pulsar_entries as pe


@pytest.fixture
def table_of():
    """Builds an entry table from entry bytes."""

    def build(data, **kw):
        return pe.entries_table(list(data), **kw)

    return build


def int_times(table: pa.Table) -> pa.Table:
    """The decode output with timestamp columns as int64 milliseconds."""
    cols = []
    for field, col in zip(table.schema, table.columns):
        cols.append(col.cast(pa.int64()) if pa.types.is_timestamp(field.type) else col)
    return pa.table(cols, names=table.column_names)
