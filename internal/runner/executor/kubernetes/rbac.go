package kubernetes

import _ "embed"

// RoleYAML is the namespaced Role that the runner's service account needs for this executor:
// pods (create, get, list, watch, delete), pods/log (get) and persistentvolumeclaims (create,
// get, delete), in the executor's namespace only. Bind it to the runner's service account with
// a RoleBinding in that namespace. The runner installation reuses it.
//
//go:embed role.yaml
var RoleYAML string
