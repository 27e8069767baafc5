"""What is a rule, and what does it report? The base class every rule extends, the findings
and fix intents a rule yields, and the diagnostics they become for the user.

- `rule`: `Rule`, `Finding`, `FixIntent` and `NodeEdit`.
- `diagnostics`: `Diagnostic`, its positions, fixes, edits, severity and applicability.
"""
