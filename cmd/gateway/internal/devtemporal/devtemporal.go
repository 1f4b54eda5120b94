// Package devtemporal runs an embedded Temporal dev server for `gateway dev`.
package devtemporal

import (
	_ "github.com/coreos/go-oidc/v3/oidc"
	_ "github.com/gin-gonic/gin"
	_ "github.com/glebarez/sqlite"
	_ "github.com/google/uuid"
	_ "github.com/stretchr/testify/require"
	_ "github.com/temporalio/ui-server/v2/server"
	_ "go.temporal.io/sdk/client"
	_ "go.temporal.io/sdk/testsuite"
	_ "go.temporal.io/sdk/worker"
	_ "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	_ "go.temporal.io/server/temporal"
	_ "go.temporal.io/server/temporaltest"
	_ "gopkg.in/yaml.v3"
	_ "gorm.io/driver/postgres"
	_ "gorm.io/gorm"
)
