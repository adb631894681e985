// Command helm is Helm v4's command line, built from the helm.sh/helm/v4 module so the chart
// tests need no downloaded binary: main only calls Helm's own root command constructor.
package main

import (
	"errors"
	"os"

	helmcmd "helm.sh/helm/v4/pkg/cmd"
	"helm.sh/helm/v4/pkg/kube"
)

func main() {
	// The field manager name Helm's own binary sets, so server-side apply sees "helm".
	kube.ManagedFieldsManager = "helm"
	root, err := helmcmd.NewRootCmd(os.Stdout, os.Args[1:], helmcmd.SetupLogging)
	if err != nil {
		os.Stderr.WriteString("helm: " + err.Error() + "\n")
		os.Exit(1)
	}
	if err := root.Execute(); err != nil {
		var cmdErr helmcmd.CommandError
		if errors.As(err, &cmdErr) {
			os.Exit(cmdErr.ExitCode)
		}
		os.Exit(1)
	}
}
