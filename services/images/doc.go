// Package images keeps the catalog of certified container images: references checked
// against the OCI reference grammar, framework and CUDA metadata, certification and
// deprecation, and which images run on which nodes given their driver versions.
package images
