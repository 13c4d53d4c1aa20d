package dev.retract.kit;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.LongSupplier;

/**
 * Reads {@code GET /v1/devices/{token}/retractions?transport=fcm}: what was
 * retracted for this phone since it last asked. FCM delivers nothing to an
 * app the user force-stopped, and may hold or drop messages, so the app reads
 * the feed at every start, after {@code onNewToken}, and when a retraction
 * says the rest is there. The key is a {@code client} key: it only reads which
 * references were retracted for a token, so shipping it inside the app is
 * what it is for.
 *
 * <p>Plain {@link HttpURLConnection}: on Android and on any JVM, no
 * dependency. Every read is bounded by a time budget across all its pages.
 */
public final class RetractionFeed {
    /** The most pages one catch-up reads: a server that kept saying "more" would otherwise keep the app busy forever. */
    static final int MAXIMUM_PAGES = 100;

    /** Ends a page's connection at its deadline, whatever it is waiting for (a daemon thread, started on first use). */
    private static final java.util.concurrent.ScheduledExecutorService WATCHDOG =
            java.util.concurrent.Executors.newSingleThreadScheduledExecutor(task -> {
                Thread thread = new Thread(task, "RetractionFeed deadline");
                thread.setDaemon(true);
                return thread;
            });

    private final String baseUrl;
    private final String apiKey;
    private final String app;
    private final String account;
    private final LongSupplier nanoTime;

    /**
     * @param baseUrl Retract's address, such as {@code https://retract.example.com}
     * @param apiKey a key with the {@code client} scope
     * @param app the app's name in Retract; needed only when the key is for several apps (else null)
     */
    public RetractionFeed(String baseUrl, String apiKey, String app) {
        this(baseUrl, apiKey, app, null, System::nanoTime);
    }

    /**
     * @param account read only the retractions of this account ({@code ?account=}); null reads every
     *     account's, each removed within its own
     */
    public RetractionFeed(String baseUrl, String apiKey, String app, String account) {
        this(baseUrl, apiKey, app, account, System::nanoTime);
    }

    RetractionFeed(String baseUrl, String apiKey, String app, LongSupplier nanoTime) {
        this(baseUrl, apiKey, app, null, nanoTime);
    }

    RetractionFeed(String baseUrl, String apiKey, String app, String account, LongSupplier nanoTime) {
        if (!baseUrl.startsWith("https://") && !baseUrl.startsWith("http://")) {
            throw new IllegalArgumentException("the feed's base URL must be http:// or https://, not " + baseUrl);
        }
        this.baseUrl = baseUrl.endsWith("/") ? baseUrl.substring(0, baseUrl.length() - 1) : baseUrl;
        this.apiKey = apiKey;
        this.app = app;
        this.account = account;
        this.nanoTime = nanoTime;
    }

    /** One answer of the feed. */
    public static final class Page {
        /** The references retracted in this page, of notifications this phone received, of the app's only account. */
        public final Set<String> references;
        /** Every account's references retracted in this page, by account (the app's only account under null). */
        public final Map<String, Set<String>> byAccount;
        /** Pass it as {@code since} next time. */
        public final String cursor;
        public final boolean hasMore;
        /** The page's {@code ETag}, or null. */
        public final String validator;
        /** The server answered 304 to the validator sent: nothing new after {@code since}. */
        public final boolean notModified;

        Page(Map<String, Set<String>> byAccount, String cursor, boolean hasMore, String validator, boolean notModified) {
            this.byAccount = java.util.Collections.unmodifiableMap(byAccount);
            this.references = byAccount.getOrDefault(null, java.util.Collections.emptySet());
            this.cursor = cursor;
            this.hasMore = hasMore;
            this.validator = validator;
            this.notModified = notModified;
        }
    }

    /** What the pages after a cursor named, and where to start next time. */
    public static final class Read {
        /** The references of the app's only account. */
        public final Set<String> references;
        /** Every account's references, by account (the app's only account under null). */
        public final Map<String, Set<String>> byAccount;
        /** After the last page read: where the next read starts. */
        public final String cursor;
        /** The validator to send from {@code cursor}: the last page's when it listed nothing. */
        public final String validator;
        public final int pages;
        /**
         * Why reading stopped before the last page (the budget ran out, a
         * page could not be read), or null when every page was read. What
         * was read counts: the next read starts after it.
         */
        public final FeedException stoppedBy;

        Read(Map<String, Set<String>> byAccount, String cursor, String validator, int pages, FeedException stoppedBy) {
            this.byAccount = java.util.Collections.unmodifiableMap(byAccount);
            this.references = byAccount.getOrDefault(null, java.util.Collections.emptySet());
            this.cursor = cursor;
            this.validator = validator;
            this.pages = pages;
            this.stoppedBy = stoppedBy;
        }
    }

    /**
     * Reads one page for the phone with FCM registration token {@code token}.
     *
     * @param since the cursor of the last page read, or null to start at the beginning of the server's retention
     * @param validator the {@code ETag} of the page last read from {@code since} when it listed nothing, or null
     * @param timeoutMillis how long the connection and the answer may take together
     */
    public Page page(String token, String since, String validator, long timeoutMillis) throws FeedException {
        return page(token, since, validator, deadline(timeoutMillis), true);
    }

    /**
     * Reads the pages after {@code since} (at most 100), within {@code budgetMillis} for them all.
     * A page after the first that cannot be read, or a budget that runs out,
     * ends the read with what came before it ({@link Read#stoppedBy}).
     *
     * @throws FeedException when the first page cannot be read
     */
    public Read read(String token, String since, String validator, long budgetMillis) throws FeedException {
        long deadline = deadline(budgetMillis);
        Map<String, Set<String>> references = new java.util.LinkedHashMap<>();
        String cursor = since;
        String sent = validator;
        int pages = 0;
        while (pages < MAXIMUM_PAGES) {
            Page page;
            try {
                page = page(token, cursor, sent, deadline, pages == 0);
            } catch (FeedException stopped) {
                if (pages == 0) throw stopped;
                return new Read(references, cursor, sent, pages, stopped);
            }
            pages++;
            for (Map.Entry<String, Set<String>> entry : page.byAccount.entrySet()) {
                references.computeIfAbsent(entry.getKey(), account -> new LinkedHashSet<>()).addAll(entry.getValue());
            }
            sent = page.byAccount.isEmpty() ? page.validator : null;
            cursor = page.cursor;
            if (!page.hasMore) break;
        }
        return new Read(references, cursor, sent, pages, null);
    }

    /** Now plus {@code millis}, in {@code nanoTime}'s terms; a budget of a year or more is a year. */
    private long deadline(long millis) {
        long bounded = Math.max(0, Math.min(millis, 365L * 24 * 60 * 60 * 1000));
        return nanoTime.getAsLong() + bounded * 1_000_000L;
    }

    private Page page(String token, String since, String validator, long deadline, boolean first) throws FeedException {
        long remainingMillis = (deadline - nanoTime.getAsLong()) / 1_000_000L;
        if (remainingMillis <= 0) throw new FeedException(0, null, "the feed's time budget ran out" + (first ? "" : " between pages"));
        HttpURLConnection connection = null;
        java.util.concurrent.ScheduledFuture<?> watchdog = null;
        java.util.concurrent.atomic.AtomicBoolean expired = new java.util.concurrent.atomic.AtomicBoolean();
        try {
            StringBuilder url = new StringBuilder(baseUrl).append("/v1/devices/").append(pathSegment(token)).append("/retractions?transport=fcm");
            if (since != null) url.append("&since=").append(encode(since));
            if (app != null) url.append("&app=").append(encode(app));
            if (account != null) url.append("&account=").append(encode(account));
            connection = (HttpURLConnection) new URL(url.toString()).openConnection();
            int timeout = (int) Math.min(Integer.MAX_VALUE, remainingMillis);
            connection.setConnectTimeout(timeout);
            connection.setReadTimeout(timeout);
            // The timeouts bound each wait; this bounds them all, name lookup included.
            HttpURLConnection watched = connection;
            watchdog = WATCHDOG.schedule(() -> {
                expired.set(true);
                watched.disconnect();
            }, remainingMillis, java.util.concurrent.TimeUnit.MILLISECONDS);
            connection.setUseCaches(false);
            connection.setInstanceFollowRedirects(false);
            connection.setRequestProperty("Authorization", "Bearer " + apiKey);
            connection.setRequestProperty("Accept", "application/json");
            // A validator says what came after a cursor: without one, it is not this page's.
            if (validator != null && since != null) connection.setRequestProperty("If-None-Match", validator);
            int status = connection.getResponseCode();
            String etag = connection.getHeaderField("ETag");
            if (status == 304 && since != null && validator != null) {
                return new Page(new java.util.LinkedHashMap<>(), since, false, etag != null ? etag : validator, true);
            }
            String body = readBody(connection, status, deadline);
            if (status != 200) {
                Map<?, ?> problem = parseObject(body);
                Object type = problem == null ? null : problem.get("type");
                Object detail = problem == null ? null : problem.get("detail");
                throw new FeedException(status, type instanceof String ? (String) type : null,
                        detail instanceof String ? (String) detail : "the server answered " + status);
            }
            return parsePage(body, status, etag);
        } catch (IOException | RuntimeException unreachable) {
            // HttpURLConnection may throw unchecked exceptions when the deadline disconnects it mid-call.
            if (unreachable instanceof java.net.SocketTimeoutException || expired.get() || nanoTime.getAsLong() >= deadline) {
                throw new FeedException(0, null, "the feed did not answer within its time budget");
            }
            throw new FeedException(0, null, "the feed cannot be reached: " + unreachable);
        } finally {
            if (watchdog != null) watchdog.cancel(false);
            if (connection != null) connection.disconnect();
        }
    }

    private static Page parsePage(String body, int status, String etag) throws FeedException {
        Map<?, ?> answer = parseObject(body);
        if (answer == null || !(answer.get("cursor") instanceof String) || !(answer.get("hasMore") instanceof Boolean)
                || !(answer.get("retractions") instanceof List)) {
            throw new FeedException(status, null, "the answer is not a retraction feed page");
        }
        Map<String, Set<String>> references = new java.util.LinkedHashMap<>();
        for (Object entry : (List<?>) answer.get("retractions")) {
            Object listed = entry instanceof Map ? ((Map<?, ?>) entry).get("references") : null;
            if (!(listed instanceof List)) throw new FeedException(status, null, "the answer is not a retraction feed page");
            // An entry of an account says so; one that names none is the app's only account's.
            Object account = ((Map<?, ?>) entry).get("account");
            String key = account instanceof String && !((String) account).isEmpty() ? (String) account : null;
            for (Object reference : (List<?>) listed) {
                if (reference instanceof String && !((String) reference).isEmpty()) {
                    references.computeIfAbsent(key, none -> new LinkedHashSet<>()).add((String) reference);
                }
            }
        }
        return new Page(references, (String) answer.get("cursor"), (Boolean) answer.get("hasMore"), etag, false);
    }

    private static Map<?, ?> parseObject(String body) {
        try {
            Object parsed = Json.parse(body);
            return parsed instanceof Map ? (Map<?, ?>) parsed : null;
        } catch (Json.SyntaxError notJson) {
            return null;
        }
    }

    /** The body, read no later than the deadline (the read timeout bounds each wait, not the whole). */
    private String readBody(HttpURLConnection connection, int status, long deadline) throws IOException, FeedException {
        InputStream stream = status >= 400 ? connection.getErrorStream() : connection.getInputStream();
        if (stream == null) return "";
        try (InputStream input = stream) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            byte[] buffer = new byte[8192];
            for (int count; (count = input.read(buffer)) >= 0; ) {
                out.write(buffer, 0, count);
                if (nanoTime.getAsLong() > deadline) throw new FeedException(0, null, "the feed did not answer within its time budget");
                if (out.size() > 4 * 1024 * 1024) throw new FeedException(status, null, "the answer is larger than 4 MiB");
            }
            return new String(out.toByteArray(), StandardCharsets.UTF_8);
        }
    }

    /**
     * {@code text} as one path segment: what RFC 3986 allows there as it is
     * (an FCM token's letters, digits, {@code -_.:}), the rest percent-encoded.
     * Retract reads the token from the path as written.
     */
    static String pathSegment(String text) {
        StringBuilder out = new StringBuilder();
        for (byte octet : text.getBytes(StandardCharsets.UTF_8)) {
            char character = (char) (octet & 0xff);
            boolean plain = (character >= 'a' && character <= 'z') || (character >= 'A' && character <= 'Z')
                    || (character >= '0' && character <= '9') || "-._~:@!$&'()*+,;=".indexOf(character) >= 0;
            if (plain) {
                out.append(character);
            } else {
                out.append('%').append(String.format("%02X", octet & 0xff));
            }
        }
        return out.toString();
    }

    private static String encode(String text) {
        try {
            return URLEncoder.encode(text, "UTF-8").replace("+", "%20");
        } catch (java.io.UnsupportedEncodingException impossible) {
            throw new AssertionError(impossible);
        }
    }
}
