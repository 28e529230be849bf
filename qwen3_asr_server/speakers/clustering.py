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

When the client says how many spoke (`SpeakerCount`), the count is the clustering's, not the
eigengap's: an exact one is the number of k-means clusters (or where the tree of a few windows
is cut); a range bounds where the eigengap is looked for, how far alike clusters are merged,
and where the tree is cut.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import scipy.linalg
from scipy.cluster.hierarchy import cut_tree, fcluster, linkage
from scipy.cluster.vq import kmeans2

from .count import SpeakerCount
from .embedding import Embeddings, unit

MAX_SPEAKERS = 10  # the eigengap looks this far, unless the client's count asks for more
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


def cluster(
    embeddings: Embeddings, block: int = BLOCK, count: SpeakerCount | None = None
) -> Labels:
    """A label per window (unit-length rows), 0, 1, ... in order of first appearance; with a
    `count`, as many labels as it allows (and there are windows for)."""
    least, most = _bounds(count, len(embeddings))
    if len(embeddings) <= block:
        return _cluster(embeddings, least, most)
    labels = np.empty(len(embeddings), dtype=np.int64)
    means: list[Embeddings] = []
    for start in range(0, len(embeddings), block):
        part = embeddings[start : start + block]  # a block may hear fewer than `least`
        found = _cluster(part, 1, min(most, len(part)))
        labels[start : start + block] = found + len(means)
        means += list(centroids(part, found))
    joined = _agglomerative(np.stack(means), MERGE_COSINE, least, most)
    return _in_order(joined[labels])


def _bounds(count: SpeakerCount | None, windows: int) -> tuple[int, int]:
    """The fewest and most clusters `windows` may form: no more than one a window."""
    if count is None:
        return 1, max(windows, 1)
    return max(min(count.least, windows), 1), max(min(count.most, windows), 1)


def _cluster(embeddings: Embeddings, least: int, most: int) -> Labels:
    count = len(embeddings)
    if count <= 1:
        return np.zeros(count, dtype=np.int64)
    if count < MIN_SPECTRAL:
        return _in_order(_agglomerative(embeddings, LINK_COSINE, least, most))
    return _merge_alike(embeddings, _spectral(embeddings, least, most), least, most)


def centroids(embeddings: Embeddings, labels: Labels) -> Embeddings:
    """Each label's mean embedding, unit length, in label order."""
    found = np.stack(
        [embeddings[labels == label].mean(axis=0) for label in range(labels.max() + 1)]
    )
    return unit(found)


def _spectral(embeddings: Embeddings, least: int, most: int) -> Labels:
    """As many clusters as the widest eigengap says, brought into `least` to `most`. Worked in
    place: the affinity becomes the Laplacian (one n x n matrix, and a copy of it while each
    row's weakest entries are found)."""
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
    top = min(max(MAX_SPEAKERS, least), count - 1)
    values, vectors = scipy.linalg.eigh(affinity, subset_by_index=[0, top], overwrite_a=True)
    speakers = min(max(int(np.argmax(np.diff(values))) + 1, least), most)
    if speakers == 1:
        return np.zeros(count, dtype=np.int64)
    points = vectors[:, :speakers].astype(np.float64)
    _, labels = kmeans2(points, speakers, minit="++", seed=SEED)
    found: Labels = np.asarray(labels, dtype=np.int64)
    return found


def _agglomerative(
    embeddings: Embeddings, cosine: float, least: int = 1, most: int | None = None
) -> Labels:
    """Average-linkage clusters, as many as stay `cosine` alike, but from `least` to `most`
    (the tree cut there instead)."""
    if len(embeddings) == 1:
        return np.zeros(1, dtype=np.int64)
    tree = linkage(embeddings.astype(np.float64), method="average", metric="cosine")
    found = fcluster(tree, 1 - cosine, criterion="distance") - 1
    wanted = min(max(int(found.max()) + 1, least), most or len(embeddings), len(embeddings))
    if wanted != found.max() + 1:
        # cut by the order of the merges, not their heights: windows of one voice can be
        # equally alike, and a cut at a height (fcluster's maxclust) then gives fewer
        found = cut_tree(tree, n_clusters=wanted).ravel()
    labels: Labels = np.asarray(found, dtype=np.int64)
    return labels


def _merge_alike(embeddings: Embeddings, labels: Labels, least: int, most: int) -> Labels:
    """Merge the two most alike clusters while their centroids' cosine reaches MERGE_COSINE
    and there are over `least`, or whatever their cosine while there are over `most`."""
    labels = _in_order(labels)
    while labels.max() + 1 > least:
        means = centroids(embeddings, labels)
        similarity = means @ means.T
        np.fill_diagonal(similarity, -1.0)
        first, second = np.unravel_index(int(np.argmax(similarity)), similarity.shape)
        if similarity[first, second] < MERGE_COSINE and labels.max() + 1 <= most:
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
