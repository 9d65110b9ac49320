package grpctransport_test

import "fmt"

// roleEnv selects the role a re-executed test binary plays.
const roleEnv = "GRPCTRANSPORT_TEST_ROLE"

func runRole(role string) int {
	fmt.Println("unknown role", role)
	return 2
}
