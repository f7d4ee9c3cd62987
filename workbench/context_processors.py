from workbench.roles import Role, roles_of


def roles(request):
    held = roles_of(request.user) if hasattr(request, "user") else frozenset()
    return {
        "user_roles": held,
        "is_admin": Role.ADMIN in held,
        "is_lead": bool({Role.LEAD, Role.ADMIN} & held),
        "is_annotator": Role.ANNOTATOR in held,
    }
