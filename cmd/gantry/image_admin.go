package main

import (
	"encoding/json"
	"errors"
	"net/url"

	"github.com/spf13/cobra"
)

// imageBody is the body of POST /api/v1/images as gantry images add's flags fill it.
type imageBody struct {
	Name             string `json:"name"`
	Reference        string `json:"reference"`
	Digest           string `json:"digest,omitempty"`
	Framework        string `json:"framework"`
	FrameworkVersion string `json:"framework_version,omitempty"`
	CUDAVersion      string `json:"cuda_version,omitempty"`
	MinDriver        string `json:"min_driver,omitempty"`
	PythonVersion    string `json:"python_version,omitempty"`
	SizeMiB          int64  `json:"size_mib,omitempty"`
	PrePull          bool   `json:"pre_pull,omitempty"`
	Description      string `json:"description,omitempty"`
}

func newImageAddCmd() *cobra.Command {
	var o clientOpts
	var in imageBody
	cmd := &cobra.Command{
		Use:   "add NAME",
		Short: "Add an image to the catalog, uncertified (admins); certify it with gantry images certify",
		Example: `  gantry images add pytorch-2.5-cuda12.4 --reference nvcr.io/nvidia/pytorch:24.10-py3 \
    --framework pytorch --framework-version 2.5.0 --cuda-version 12.4 --python-version 3.10`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{errors.New("give the image's catalog name, e.g. pytorch-2.5-cuda12.4")}
			}
			in.Name = args[0]
			// Strings, a number and a boolean always encode.
			b, _ := json.Marshal(in)
			return o.post(cmd, "add image "+in.Name, "/api/v1/images", b, func([]byte) (string, error) {
				return "Added " + in.Name + " (uncertified). Certify it with: gantry images certify " + in.Name, nil
			})
		},
	}
	o.addFlags(cmd, true)
	f := cmd.Flags()
	f.StringVar(&in.Reference, "reference", "", "the image reference, e.g. nvcr.io/nvidia/pytorch:24.10-py3 (required)")
	f.StringVar(&in.Framework, "framework", "", "pytorch, tensorflow, jax, cuda or other (required)")
	f.StringVar(&in.FrameworkVersion, "framework-version", "", "e.g. 2.5.0")
	f.StringVar(&in.CUDAVersion, "cuda-version", "", "e.g. 12.4")
	f.StringVar(&in.MinDriver, "min-driver", "", "the oldest NVIDIA driver it runs on, e.g. 550.54.14")
	f.StringVar(&in.PythonVersion, "python-version", "", "e.g. 3.10")
	f.StringVar(&in.Digest, "digest", "", "sha256:<hex>, where the reference holds none")
	f.Int64Var(&in.SizeMiB, "size-mib", 0, "its size in MiB")
	f.BoolVar(&in.PrePull, "pre-pull", false, "agents pull it before it is needed")
	f.StringVar(&in.Description, "description", "", "what it is for")
	return cmd
}

// newImageStatusCmd is an admin's verb that sets an image's status.
func newImageStatusCmd(verb, status, short string) *cobra.Command {
	var o clientOpts
	cmd := &cobra.Command{
		Use:   verb + " NAME",
		Short: short,
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{errors.New("give the image's catalog name (gantry images ls lists them)")}
			}
			return o.post(cmd, verb+" image "+args[0], "/api/v1/images/"+url.PathEscape(args[0])+"/status", []byte(`{"status": "`+status+`"}`), func([]byte) (string, error) {
				return args[0] + " is now " + status + ".", nil
			})
		},
	}
	o.addFlags(cmd, true)
	return cmd
}
