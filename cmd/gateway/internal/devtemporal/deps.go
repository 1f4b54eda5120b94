package devtemporal

// Blank imports kept from the original placeholder so that go.mod stays tidy
// for packages that are still being written in parallel. They are not used by
// devtemporal itself and will be removed once the real users exist.
import (
	_ "github.com/coreos/go-oidc/v3/oidc"
	_ "github.com/gin-gonic/gin"
	_ "github.com/glebarez/sqlite"
	_ "github.com/google/uuid"
	_ "go.temporal.io/sdk/testsuite"
	_ "go.temporal.io/server/temporaltest"
	_ "gopkg.in/yaml.v3"
	_ "gorm.io/driver/postgres"
	_ "gorm.io/gorm"
)
