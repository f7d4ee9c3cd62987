"""Protocol rules as plain data and pure functions: one home for each rule.

This layer sits below selectors and services (both import it) and above models: it may import
``goldset.models`` for their choices, never a selector, service, form or view.
"""
