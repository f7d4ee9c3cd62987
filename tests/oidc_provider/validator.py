from oauth2_provider.oauth2_validators import OAuth2Validator


class GroupsClaimValidator(OAuth2Validator):
    """Adds the user's groups (the role claim), e-mail and names to the ID token and user info."""

    oidc_claim_scope = {**OAuth2Validator.oidc_claim_scope, "groups": "openid"}

    def get_additional_claims(self, request):
        user = request.user
        return {
            "groups": sorted(user.groups.values_list("name", flat=True)),
            "email": user.email,
            "preferred_username": user.username,
            "given_name": user.first_name,
            "family_name": user.last_name,
        }
