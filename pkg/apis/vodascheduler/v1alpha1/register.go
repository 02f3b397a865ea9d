package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of TrainingJobs.
var GroupVersion = schema.GroupVersion{Group: "vodascheduler.io", Version: "v1alpha1"}

// Resource is the TrainingJob resource.
var Resource = GroupVersion.WithResource("trainingjobs")

// The queue resources.
var (
	ClusterQueueResource = GroupVersion.WithResource("clusterqueues")
	LocalQueueResource   = GroupVersion.WithResource("localqueues")
)

// AddToScheme registers the TrainingJob types with a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &TrainingJob{}, &TrainingJobList{},
		&ClusterQueue{}, &ClusterQueueList{}, &LocalQueue{}, &LocalQueueList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
