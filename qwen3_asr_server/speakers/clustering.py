"""Which windows one speaker said: spectral clustering of the windows' embeddings, the
number of speakers from the eigengap, as 3D-Speaker does it. Pure.

The affinity of two windows is their cosine; each row keeps only its strongest entries (so
that one speaker's many windows form a connected block however long they talk), and the
Laplacian's smallest eigenvalues tell how many blocks there are: the widest gap between
consecutive ones. Clusters whose centroids are still alike are merged after, which catches a
speaker split in two by a change of tone.

The affinity of n windows takes n² numbers and its eigenvectors ~n³ operations: an hour of
speech (4,800 windows) is 92 MB and ~5 s of one core. Longer recordings are clustered in
blocks of that size, and the blocks' clusters then joined where their centroids are alike, so
memory stays bounded however long the recording.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import scipy.linalg
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.cluster.vq import kmeans2

from .embedding import Embeddings, unit

MAX_SPEAKERS = 10  # the eigengap looks this far
PRUNE = 0.012  # fraction of each row of the affinity kept (3D-Speaker's p-value)
MIN_KEPT = 6  # entries kept per row at least
MERGE_COSINE = 0.78  # clusters whose centroids are this alike are one speaker
MIN_SPECTRAL = 20  # fewer windows than this: agglomerative clustering
LINK_COSINE = 0.6  # which joins windows (not means) this alike: CAM++ gives ~0.75-0.9 for
# two windows of one voice, ~0.3-0.6 for two voices; of 0.55-0.7, 0.6 got the most speaker
# counts right on short flite conversations (27 of 36)
SEED = 0  # k-means starts from the same points every time: the same input, the same labels
BLOCK = 4800  # windows clustered at once at most: an hour of speech

Labels = npt.NDArray[np.int64]


def cluster(embeddings: Embeddings, block: int = BLOCK) -> Labels:
    """A label per window (unit-length rows), 0, 1, ... in order of first appearance."""
    if len(embeddings) <= block:
        return _cluster(embeddings)
    labels = np.empty(len(embeddings), dtype=np.int64)
    means: list[Embeddings] = []
    for start in range(0, len(embeddings), block):
        part = embeddings[start : start + block]
        found = _cluster(part)
        labels[start : start + block] = found + len(means)
        means += list(centroids(part, found))
    joined = _agglomerative(np.stack(means), MERGE_COSINE)
    return _in_order(joined[labels])


def _cluster(embeddings: Embeddings) -> Labels:
    count = len(embeddings)
    if count <= 1:
        return np.zeros(count, dtype=np.int64)
    if count < MIN_SPECTRAL:
        return _in_order(_agglomerative(embeddings, LINK_COSINE))
    return _merge_alike(embeddings, _spectral(embeddings))


def centroids(embeddings: Embeddings, labels: Labels) -> Embeddings:
    """Each label's mean embedding, unit length, in label order."""
    found = np.stack(
        [embeddings[labels == label].mean(axis=0) for label in range(labels.max() + 1)]
    )
    return unit(found)


def _spectral(embeddings: Embeddings) -> Labels:
    """Worked in place: the affinity becomes the Laplacian (one n x n matrix, and a copy of it
    while each row's weakest entries are found)."""
    count = len(embeddings)
    affinity = embeddings @ embeddings.T
    kept = min(count, max(MIN_KEPT, round(PRUNE * count)))
    strongest = np.partition(affinity, count - kept, axis=1)[:, count - kept]
    affinity[affinity < strongest[:, None]] = 0.0
    affinity += affinity.T
    affinity *= 0.5
    np.maximum(affinity, 0.0, out=affinity)
    degrees = affinity.sum(axis=1)
    np.negative(affinity, out=affinity)
    affinity[np.diag_indices(count)] += degrees  # the Laplacian: degrees less affinity
    top = min(MAX_SPEAKERS, count - 1)
    values, vectors = scipy.linalg.eigh(affinity, subset_by_index=[0, top], overwrite_a=True)
    speakers = int(np.argmax(np.diff(values))) + 1
    if speakers == 1:
        return np.zeros(count, dtype=np.int64)
    points = vectors[:, :speakers].astype(np.float64)
    _, labels = kmeans2(points, speakers, minit="++", seed=SEED)
    found: Labels = np.asarray(labels, dtype=np.int64)
    return found


def _agglomerative(embeddings: Embeddings, cosine: float) -> Labels:
    """Average-linkage clusters, as many as stay `cosine` alike."""
    if len(embeddings) == 1:
        return np.zeros(1, dtype=np.int64)
    tree = linkage(embeddings.astype(np.float64), method="average", metric="cosine")
    found = fcluster(tree, 1 - cosine, criterion="distance")
    labels: Labels = np.asarray(found, dtype=np.int64) - 1
    return labels


def _merge_alike(embeddings: Embeddings, labels: Labels) -> Labels:
    """Merge the two most alike clusters while their centroids' cosine reaches MERGE_COSINE."""
    labels = _in_order(labels)
    while labels.max() > 0:
        means = centroids(embeddings, labels)
        similarity = means @ means.T
        np.fill_diagonal(similarity, -1.0)
        first, second = np.unravel_index(int(np.argmax(similarity)), similarity.shape)
        if similarity[first, second] < MERGE_COSINE:
            break
        labels = _in_order(np.where(labels == max(first, second), min(first, second), labels))
    return labels


def _in_order(labels: Labels) -> Labels:
    """The same partition, labelled 0, 1, ... by first appearance."""
    _, first = np.unique(labels, return_index=True)
    order = labels[np.sort(first)]
    renamed = np.empty(int(labels.max()) + 1, dtype=np.int64)
    renamed[order] = np.arange(len(order))
    result: Labels = renamed[labels]
    return result
