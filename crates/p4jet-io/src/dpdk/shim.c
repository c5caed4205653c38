/*
 * p4jet's C shim over DPDK (22.11 LTS, Debian's libdpdk-dev). Built by
 * crates/p4jet-io/build.rs with the `dpdk` feature. DPDK's burst and mbuf
 * functions are static inline in its headers, so Rust cannot call them
 * directly: this file wraps the few the port needs, one call per burst, and
 * keeps every DPDK structure on this side (Rust sees opaque pointers and the
 * small structs declared in dpdk/ffi.rs, which must match the ones below).
 */
#include <rte_config.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_dev.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <string.h>

struct p4j_info {
	uint16_t max_rx_queues;
	uint16_t max_tx_queues;
	int32_t socket;
	uint64_t rss_offloads;
	char driver[64];
};

struct p4j_stats {
	uint64_t ipackets, opackets, ibytes, obytes, imissed, ierrors, oerrors, rx_nombuf;
};

struct p4j_frame {
	const uint8_t *data;
	uint32_t len;
};

struct p4j_rx {
	const uint8_t *data;
	uint32_t data_len; /* bytes in the first segment */
	uint32_t pkt_len;  /* bytes of the whole frame */
	uint8_t *buf;      /* the first segment's buffer: buf_addr */
	uint16_t buf_len;  /* its size, headroom included */
	uint16_t data_off; /* where the frame starts in it */
	uint16_t nb_segs;
	uint16_t pad;
};

int p4j_errno(void) { return rte_errno; }

const char *p4j_strerror(int e) { return rte_strerror(e < 0 ? -e : e); }

int p4j_eal_init(int argc, char **argv) { return rte_eal_init(argc, argv); }

int p4j_thread_register(void)
{
	if (rte_lcore_id() != LCORE_ID_ANY)
		return 0;
	return rte_thread_register();
}

/* The ethdev port called `name`, probing `devargs` (hot-plug) if there is none yet. */
int p4j_dev_attach(const char *devargs, const char *name, uint16_t *port)
{
	if (rte_eth_dev_get_port_by_name(name, port) == 0)
		return 0;
	int r = rte_dev_probe(devargs);
	if (r < 0)
		return r;
	if (rte_eth_dev_get_port_by_name(name, port) == 0)
		return 0;
	return -ENODEV;
}

int p4j_dev_info(uint16_t port, struct p4j_info *out)
{
	struct rte_eth_dev_info info;
	int r = rte_eth_dev_info_get(port, &info);
	if (r != 0)
		return r;
	out->max_rx_queues = info.max_rx_queues;
	out->max_tx_queues = info.max_tx_queues;
	out->socket = rte_eth_dev_socket_id(port);
	out->rss_offloads = info.flow_type_rss_offloads;
	snprintf(out->driver, sizeof out->driver, "%s", info.driver_name ? info.driver_name : "?");
	return 0;
}

struct rte_mempool *p4j_pool_create(const char *name, unsigned n, unsigned cache, int socket)
{
	return rte_pktmbuf_pool_create(name, n, cache, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				       socket < 0 ? (int)rte_socket_id() : socket);
}

void p4j_pool_free(struct rte_mempool *mp) { rte_mempool_free(mp); }

/* mbufs of the pool not back in it (nor in a per-lcore cache) */
unsigned p4j_pool_in_use(const struct rte_mempool *mp) { return rte_mempool_in_use_count(mp); }

/*
 * Configures `nq` rx/tx queue pairs (RSS over IP/TCP/UDP when nq > 1 and the
 * device hashes; with `symmetric`, the key that gives both directions of a flow
 * the same hash), promiscuous mode, and starts the port. *rx_desc / *tx_desc
 * are adjusted to what the device accepts.
 */
int p4j_dev_setup(uint16_t port, uint16_t nq, uint16_t *rx_desc, uint16_t *tx_desc,
		  struct rte_mempool *mp, int symmetric, uint64_t *rss_hf_out)
{
	struct rte_eth_dev_info info;
	int r = rte_eth_dev_info_get(port, &info);
	if (r != 0)
		return r;
	struct rte_eth_conf conf;
	memset(&conf, 0, sizeof conf);
	static uint8_t sym_key[40];
	for (unsigned i = 0; i < sizeof sym_key; i += 2) {
		sym_key[i] = 0x6d;
		sym_key[i + 1] = 0x5a;
	}
	uint64_t hf = (RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP) & info.flow_type_rss_offloads;
	*rss_hf_out = 0;
	if (nq > 1 && hf != 0) {
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_hf = hf;
		if (symmetric && (info.hash_key_size == 0 || info.hash_key_size == 40)) {
			conf.rx_adv_conf.rss_conf.rss_key = sym_key;
			conf.rx_adv_conf.rss_conf.rss_key_len = sizeof sym_key;
		}
		*rss_hf_out = hf;
	}
	if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE;
	r = rte_eth_dev_configure(port, nq, nq, &conf);
	if (r != 0)
		return r;
	r = rte_eth_dev_adjust_nb_rx_tx_desc(port, rx_desc, tx_desc);
	if (r != 0)
		return r;
	int socket = rte_eth_dev_socket_id(port);
	if (socket < 0)
		socket = (int)rte_socket_id();
	for (uint16_t q = 0; q < nq; q++) {
		r = rte_eth_rx_queue_setup(port, q, *rx_desc, socket, NULL, mp);
		if (r != 0)
			return r;
		struct rte_eth_txconf txc = info.default_txconf;
		txc.offloads = conf.txmode.offloads;
		r = rte_eth_tx_queue_setup(port, q, *tx_desc, socket, &txc);
		if (r != 0)
			return r;
	}
	r = rte_eth_dev_start(port);
	if (r != 0)
		return r;
	/* not every PMD has a promiscuous mode (net_null, net_ring): not an error */
	(void)rte_eth_promiscuous_enable(port);
	return 0;
}

/* Stops and closes the port and removes its device, so that it can be probed again. */
void p4j_dev_close(uint16_t port)
{
	struct rte_eth_dev_info info;
	struct rte_device *dev = NULL;
	if (rte_eth_dev_info_get(port, &info) == 0)
		dev = info.device;
	(void)rte_eth_dev_stop(port);
	(void)rte_eth_dev_close(port);
	if (dev != NULL)
		(void)rte_dev_remove(dev);
}

int p4j_stats(uint16_t port, struct p4j_stats *out)
{
	struct rte_eth_stats s;
	int r = rte_eth_stats_get(port, &s);
	if (r != 0)
		return r;
	out->ipackets = s.ipackets;
	out->opackets = s.opackets;
	out->ibytes = s.ibytes;
	out->obytes = s.obytes;
	out->imissed = s.imissed;
	out->ierrors = s.ierrors;
	out->oerrors = s.oerrors;
	out->rx_nombuf = s.rx_nombuf;
	return 0;
}

/* Receives up to n frames of queue q; out[i] describes m[i]. */
uint16_t p4j_rx_burst(uint16_t port, uint16_t q, struct rte_mbuf **m, struct p4j_rx *out, uint16_t n)
{
	uint16_t got = rte_eth_rx_burst(port, q, m, n);
	for (uint16_t i = 0; i < got; i++) {
		out[i].data = rte_pktmbuf_mtod(m[i], const uint8_t *);
		out[i].data_len = m[i]->data_len;
		out[i].pkt_len = m[i]->pkt_len;
		out[i].buf = m[i]->buf_addr;
		out[i].buf_len = m[i]->buf_len;
		out[i].data_off = m[i]->data_off;
		out[i].nb_segs = m[i]->nb_segs;
	}
	return got;
}

/* Copies a (multi-segment) frame into dst (len bytes: its pkt_len). */
int p4j_mbuf_copy(const struct rte_mbuf *m, uint8_t *dst, uint32_t len)
{
	const void *p = rte_pktmbuf_read(m, 0, len, dst);
	if (p == NULL)
		return -1;
	if (p != dst)
		memcpy(dst, p, len);
	return 0;
}

void p4j_free_bulk(struct rte_mbuf **m, unsigned n) { rte_pktmbuf_free_bulk(m, n); }

void p4j_free(struct rte_mbuf *m) { rte_pktmbuf_free(m); }

/*
 * Transmits the one-segment mbufs m[0..n] on queue q, frame i being len[i] bytes
 * at offset off[i] of its buffer (the switch may have moved its start and end).
 * Returns how many were sent: m[0..sent] belong to the device now, the others
 * still to the caller.
 */
uint16_t p4j_tx_mbufs(uint16_t port, uint16_t q, struct rte_mbuf **m, const uint16_t *off,
		      const uint16_t *len, uint16_t n)
{
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *b = m[i];
		b->data_off = off[i];
		b->data_len = len[i];
		b->pkt_len = len[i];
	}
	return rte_eth_tx_burst(port, q, m, n);
}

/*
 * Copies frames[0..n] into new mbufs of mp and transmits them on queue q.
 * Returns how many frames were consumed (a prefix): sent, or dropped because
 * they do not fit one mbuf (*too_big counts those). Frames after the prefix
 * were not taken (transmit ring full, or no free mbuf).
 */
uint16_t p4j_tx_copy(uint16_t port, uint16_t q, struct rte_mempool *mp, const struct p4j_frame *frames,
		     uint16_t n, uint32_t *too_big)
{
	struct rte_mbuf *m[256];
	uint16_t idx[256];
	if (n > 256)
		n = 256;
	*too_big = 0;
	if (n == 0)
		return 0;
	if (rte_pktmbuf_alloc_bulk(mp, m, n) != 0) {
		/* fewer free mbufs than frames: send what we can get */
		uint16_t k = 0;
		while (k < n) {
			struct rte_mbuf *one = rte_pktmbuf_alloc(mp);
			if (one == NULL)
				break;
			m[k++] = one;
		}
		if (k == 0)
			return 0;
		n = k;
	}
	uint16_t j = 0;
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *b = m[j];
		uint32_t len = frames[i].len;
		if (len > rte_pktmbuf_tailroom(b) || len > UINT16_MAX) {
			(*too_big)++;
			continue;
		}
		memcpy(rte_pktmbuf_mtod(b, uint8_t *), frames[i].data, len);
		b->data_len = (uint16_t)len;
		b->pkt_len = len;
		idx[j] = i;
		j++;
	}
	/* mbufs of frames that were too big are unused */
	if (j < n)
		rte_pktmbuf_free_bulk(&m[j], n - j);
	uint16_t sent = j ? rte_eth_tx_burst(port, q, m, j) : 0;
	if (sent == j)
		return n;
	rte_pktmbuf_free_bulk(&m[sent], j - sent);
	/* consumed: every frame before the first unsent one */
	uint16_t consumed = idx[sent];
	/* the too-big frames inside the consumed prefix: consumed - sent */
	*too_big = (uint32_t)(consumed - sent);
	return consumed;
}
