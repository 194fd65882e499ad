import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import javax.xml.transform.Transformer;
import javax.xml.transform.stream.StreamResult;
import javax.xml.transform.stream.StreamSource;

/**
 * bench/run.sh's Tomcat first burst: a servlet whose one request has Tomcat load what an
 * application brings (H2 runs a small SQL script, Xalan a transform, both from the webapp's
 * WEB-INF/lib; the JDK parses XML, formats a date, sets up TLS and an HTTP client), so that
 * the JVM holds 5,000 classes and more when the first burst begins, as issue 30 asks.
 * Answers "rows=N lines=M".
 */
public class TomcatWork extends HttpServlet {
    private static final String XSL = "<xsl:stylesheet version=\"1.0\" "
            + "xmlns:xsl=\"http://www.w3.org/1999/XSL/Transform\"><xsl:output method=\"text\"/>"
            + "<xsl:template match=\"/\"><xsl:for-each select=\"r/i\"><xsl:sort select=\"@n\" "
            + "data-type=\"number\" order=\"descending\"/><xsl:value-of select=\"@n\"/>"
            + "<xsl:text>&#10;</xsl:text></xsl:for-each></xsl:template></xsl:stylesheet>";

    @Override
    protected void doGet(HttpServletRequest request, HttpServletResponse response) throws IOException {
        int rows;
        try {
            Class.forName("org.h2.Driver");
            try (Connection c = DriverManager.getConnection("jdbc:h2:mem:work");
                    Statement s = c.createStatement()) {
                s.execute("CREATE TABLE IF NOT EXISTS item(id INT PRIMARY KEY, price INT)");
                s.execute("MERGE INTO item SELECT X, MOD(X * 37, 1000) FROM SYSTEM_RANGE(1, 1000)");
                s.execute("CREATE INDEX IF NOT EXISTS item_price ON item(price)");
                try (ResultSet r = s.executeQuery("SELECT COUNT(*) FROM item WHERE price < 500")) {
                    r.next();
                    rows = r.getInt(1);
                }
                // More of H2: a view, a window function, its catalog, a script of the database.
                s.execute("CREATE OR REPLACE VIEW cheap AS SELECT id, price, "
                        + "RANK() OVER (ORDER BY price) AS k FROM item WHERE price < 100");
                s.executeQuery("SELECT MAX(k), SUM(price) FROM cheap").close();
                s.executeQuery("SELECT * FROM INFORMATION_SCHEMA.COLUMNS").close();
                s.executeQuery("SCRIPT").close();
            }
            // The JDK's own XML parser, dates, patterns, streams and compression.
            javax.xml.parsers.DocumentBuilderFactory.newInstance().newDocumentBuilder()
                    .parse(new org.xml.sax.InputSource(new StringReader(XSL)));
            java.time.format.DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss zzz")
                    .format(java.time.ZonedDateTime.now());
            java.util.regex.Pattern.compile("(\\w+)@(\\w+)\\.com").matcher("a@b.com").matches();
            java.util.stream.IntStream.range(0, 100).boxed()
                    .collect(java.util.stream.Collectors.groupingBy(i -> i % 7)).size();
            new java.util.zip.GZIPOutputStream(new java.io.ByteArrayOutputStream()).close();
            // What an HTTPS client brings: the TLS provider and the HTTP client.
            javax.net.ssl.SSLContext.getDefault().createSSLEngine().getSupportedCipherSuites();
            java.net.http.HttpClient.newHttpClient();
            StringBuilder xml = new StringBuilder("<r>");
            for (int i = 0; i < 100; i++) {
                xml.append("<i n=\"").append(i).append("\"/>");
            }
            Transformer t = new org.apache.xalan.processor.TransformerFactoryImpl()
                    .newTransformer(new StreamSource(new StringReader(XSL)));
            StringWriter out = new StringWriter();
            t.transform(new StreamSource(new StringReader(xml.append("</r>").toString())), new StreamResult(out));
            response.setContentType("text/plain");
            response.getWriter().println("rows=" + rows + " lines=" + out.toString().split("\n").length);
        } catch (Exception e) {
            throw new IOException(e);
        }
    }
}
