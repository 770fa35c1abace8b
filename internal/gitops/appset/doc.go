// Package appset is the runtime's ApplicationSet controller, in the role of Argo CD's: it
// decodes argoproj.io/v1alpha1 ApplicationSets as Argo CD writes them, runs their generators
// (list, clusters, git directories and files, matrix, merge), renders the template for each
// parameter set (Go templates with a vetted Sprig function set, or the legacy {{param}} form,
// then templatePatch) and hands the resulting Applications to the engine as applications owned
// by the ApplicationSet, under its syncPolicy (applicationsSync, preserveResourcesOnDeletion)
// and its RollingSync strategy.
//
// A render is all or nothing: when one parameter set renders an invalid Application, the
// ApplicationSet gets an ErrorOccurred condition naming the generator element
// (generators[0].list.elements[2]) and the applications stay as they were.
package appset
