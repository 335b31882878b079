"""Platform-level tools the probes and the tests share: row-level-security checks (`rls`), hostile input
(`hostile_input`), the production server harness (`production_server`) and the route walk (`routes`)."""
