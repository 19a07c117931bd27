"""Every type, field, argument, enum value and input field of the schema has a description
(introspection is what GraphiQL, code generators and LLM agents read)."""

from __future__ import annotations

from graphql import (
    GraphQLEnumType,
    GraphQLInputObjectType,
    GraphQLInterfaceType,
    GraphQLObjectType,
    GraphQLSchema,
)

from mnemoql.resolvers import schema

ROOTS = {"Query", "Mutation", "Subscription"}  # described by their fields


def missing_descriptions(gql: GraphQLSchema) -> list[str]:
    missing: list[str] = []
    for name, type_ in gql.type_map.items():
        if name.startswith("__"):
            continue
        if not type_.description and name not in ROOTS:
            missing.append(name)
        if isinstance(type_, GraphQLObjectType | GraphQLInterfaceType):
            for fname, field in type_.fields.items():
                if not field.description:
                    missing.append(f"{name}.{fname}")
                missing += [
                    f"{name}.{fname}({aname})"
                    for aname, arg in field.args.items()
                    if not arg.description
                ]
        elif isinstance(type_, GraphQLInputObjectType):
            missing += [
                f"{name}.{fname}" for fname, f in type_.fields.items() if not f.description
            ]
        elif isinstance(type_, GraphQLEnumType):
            missing += [f"{name}.{v}" for v, value in type_.values.items() if not value.description]
    return missing


def test_everything_in_the_schema_is_described() -> None:
    missing = missing_descriptions(schema._schema)
    assert not missing, f"{len(missing)} without a description: {', '.join(missing)}"


def test_the_check_finds_a_missing_description() -> None:
    gql = schema._schema
    field = gql.type_map["PageInfo"].fields["hasNextPage"]  # type: ignore[union-attr]
    kept, field.description = field.description, None
    try:
        assert missing_descriptions(gql) == ["PageInfo.hasNextPage"]
    finally:
        field.description = kept
