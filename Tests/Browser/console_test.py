"""The moderation console in a real browser (headless Chromium through
Selenium), as a moderator and as a support person who may only look.

Run by scripts/console-test, which starts `retract serve`, the APNs simulator
and PostgreSQL, records the notifications below and passes:

  CONSOLE_BASE   the server's base URL
  MODERATOR_KEY  a key with read and retract for the apps newsroom and chat
  VIEWER_KEY     a key with read only, for newsroom
  APPROVER_KEY   a key with read and approve, for broadcast (whose retractions
                 of more than 10 devices wait for approval)
  SCREENSHOTS    a folder for the screenshots docs/console.md shows
"""

import datetime
import json
import os
import sys
import time
import urllib.parse

from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

BASE = os.environ["CONSOLE_BASE"]
MODERATOR_KEY = os.environ["MODERATOR_KEY"]
VIEWER_KEY = os.environ["VIEWER_KEY"]
APPROVER_KEY = os.environ["APPROVER_KEY"]
SHOTS = os.environ["SCREENSHOTS"]

# A thread label scripts/console-test records two days back (out of the default
# list) with a key that may only record: markup hidden in grapheme clusters.
HOSTILE_THREAD = os.environ["HOSTILE_THREAD"]
# What the review's reflected link put in `next`.
HOSTILE_NEXT = '/console/x\u0600"\u0600>\u0600<meta http-equiv=refresh content=0;url=https://evil.example/phish\u0600>'

WRONG = "breaking-2026-11-26-wrong"
WRONG_DEVICES = 500
REASON = "Sent to the wrong segment: pulled by trust and safety"


def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(30)
    return driver


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def shot(driver, name):
    # The whole page, not only the window: as tall as its content.
    height = driver.execute_script("return Math.max(document.body.scrollHeight, 400)")
    width = driver.execute_script("return window.innerWidth")
    driver.set_window_size(max(width, 360), min(height + 140, 4000))
    driver.save_screenshot(os.path.join(SHOTS, name))


def every_field_is_labelled(driver, page):
    """Each visible form control has a <label for=...> or an aria-label."""
    for control in driver.find_elements(By.CSS_SELECTOR, "input:not([type=hidden]), select, textarea"):
        identifier = control.get_attribute("id")
        labelled = bool(control.get_attribute("aria-label")) or (
            identifier and driver.find_elements(By.CSS_SELECTOR, 'label[for="%s"]' % identifier))
        check(labelled, "%s: a control without a label: %s" % (page, control.get_attribute("outerHTML")[:120]))


def sign_in(driver, key, wait):
    driver.get(BASE + "/console/sign-in")
    field = wait.until(EC.presence_of_element_located((By.ID, "key")))
    field.send_keys(key)
    # By keyboard: Enter submits the form.
    field.send_keys(Keys.ENTER)
    wait.until(EC.presence_of_element_located((By.ID, "key-name")))


def post_from_page(driver, path, fields):
    """POSTs a form from the page's own origin, with the session's form token,
    as a person editing the page could; returns the status."""
    return driver.execute_async_script(
        """
        const [path, fields, done] = arguments;
        const token = document.querySelector('input[name=csrf]').value;
        const body = new URLSearchParams(Object.assign({csrf: token}, fields));
        fetch(path, {method: 'POST', body, credentials: 'same-origin', redirect: 'manual'})
            .then(r => done(r.status)).catch(e => done('error ' + e));
        """, path, fields)


def moderator_takes_back_the_broadcast(driver, wait):
    driver.get(BASE + "/console")
    wait.until(EC.presence_of_element_located((By.ID, "key")))
    check("/console/sign-in" in driver.current_url, "an unsigned browser is not sent to sign in: %s" % driver.current_url)
    every_field_is_labelled(driver, "sign-in")
    shot(driver, "sign-in.png")

    # A wrong key is refused, saying so.
    field = driver.find_element(By.ID, "key")
    field.send_keys("rk_" + "x" * 43)
    field.send_keys(Keys.ENTER)
    error = wait.until(EC.presence_of_element_located((By.ID, "sign-in-error")))
    check("Unknown or revoked" in error.text, "wrong key: %r" % error.text)

    sign_in(driver, MODERATOR_KEY, wait)
    check(driver.find_element(By.ID, "key-name").text == "trust-and-safety", "signed in as someone else")
    # The session cookie is not readable by scripts (HttpOnly), is Secure, and __Host- (whole host, no Domain).
    check("retract_console=" not in driver.execute_script("return document.cookie"), "the session cookie is readable by scripts")
    session = [c for c in driver.get_cookies() if c["name"] == "__Host-retract_console"]
    check(len(session) == 1, "no __Host-retract_console cookie: %s" % [c["name"] for c in driver.get_cookies()])
    check(session[0]["secure"] and session[0]["httpOnly"] and session[0]["path"] == "/", "the session cookie: %s" % session[0])
    rows = driver.find_elements(By.CSS_SELECTOR, "#notifications tbody tr")
    check(len(rows) == 3, "the list shows %d notifications, not the 3 recorded" % len(rows))
    every_field_is_labelled(driver, "notifications")
    shot(driver, "notifications.png")

    # Search: the app and part of the day.
    Select(driver.find_element(By.ID, "app")).select_by_visible_text("newsroom")
    driver.find_element(By.ID, "reference").send_keys(WRONG)
    driver.find_element(By.ID, "search").click()
    wait.until(EC.url_contains("reference="))
    rows = driver.find_elements(By.CSS_SELECTOR, "#notifications tbody tr")
    check(len(rows) == 1, "the search found %d rows" % len(rows))
    cells = rows[0].find_elements(By.TAG_NAME, "td")
    check(cells[0].text == WRONG and cells[2].text == str(WRONG_DEVICES), "the row: %r" % [c.text for c in cells])
    check("campaign evening-alert" in cells[5].text, "the campaign is not shown: %r" % cells[5].text)

    rows[0].find_element(By.CSS_SELECTOR, "a.reference").click()
    wait.until(EC.presence_of_element_located((By.ID, "device-count")))
    check(driver.find_element(By.ID, "device-count").text == str(WRONG_DEVICES), "device count on the page")
    check(len(driver.find_elements(By.CSS_SELECTOR, "#devices tbody tr")) == 50, "the first 50 devices are listed")
    every_field_is_labelled(driver, "notification")

    # A reason is required: the browser will not send the form without one.
    driver.find_element(By.ID, "dry-run").click()
    check(driver.find_elements(By.ID, "retract-form"), "the form was sent without a reason")
    driver.find_element(By.ID, "reason").send_keys(REASON)
    shot(driver, "notification.png")
    driver.find_element(By.ID, "dry-run").click()
    count = wait.until(EC.presence_of_element_located((By.ID, "dry-run-devices")))
    check(count.text == str(WRONG_DEVICES), "the dry run counts %s devices" % count.text)
    shot(driver, "confirm.png")

    driver.find_element(By.ID, "confirm").click()
    wait.until(EC.presence_of_element_located((By.ID, "progress")))
    check("/console/retractions/" in driver.current_url, "not on the retraction's page: %s" % driver.current_url)
    # The page follows the retraction live (the script sets data-finished from the events).
    WebDriverWait(driver, 120).until(
        lambda d: d.find_element(By.ID, "progress").get_attribute("data-finished") == "true")
    sent = driver.find_element(By.CSS_SELECTOR, '[data-field="sent"]').text
    state = driver.find_element(By.CSS_SELECTOR, '[data-field="state"]').text
    check(state == "done" and sent == str(WRONG_DEVICES), "the retraction ended %s with %s sent" % (state, sent))
    check(driver.find_element(By.ID, "progress-bar").get_attribute("value") == str(WRONG_DEVICES), "the bar is not full")
    shot(driver, "retraction.png")
    retraction_url = driver.current_url

    # A form without the session's token is refused.
    check(post_from_page(driver, "/console/retract", {"csrf": "", "app": "newsroom", "reference": WRONG, "reason": "x"}) == 403,
          "a form without its token was not refused")

    # The audit log: who, what, why, with the key's name; the dry run too.
    driver.find_element(By.LINK_TEXT, "Audit").click()
    wait.until(EC.presence_of_element_located((By.ID, "audit")))
    rows = [row.text for row in driver.find_elements(By.CSS_SELECTOR, "#audit tbody tr")]
    ours = [row for row in rows if "trust-and-safety" in row and REASON in row and "retraction.created" in row]
    check(len(ours) == 2, "the audit log has %d entries of the moderator's dry run and retraction: %r" % (len(ours), rows))
    check(any("dry run" in row for row in ours), "the dry run is not marked in the audit log: %r" % ours)
    link = driver.find_element(By.CSS_SELECTOR, '#audit a[href="%s"]' % retraction_url.replace(BASE, ""))
    check(link is not None, "the audit entry does not link the retraction")
    every_field_is_labelled(driver, "audit")
    shot(driver, "audit.png")

    # On a phone's width: nothing wider than the screen except inside a scrolling table.
    driver.set_window_size(390, 844)
    driver.get(BASE + "/console/notifications")
    wait.until(EC.presence_of_element_located((By.ID, "notifications")))
    overflow = driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
    check(overflow <= 1, "the page is %dpx wider than a phone's screen" % overflow)
    shot(driver, "notifications-phone.png")
    driver.set_window_size(1280, 900)

    # Sign out ends the session on the server.
    driver.find_element(By.CSS_SELECTOR, "form[action='/console/sign-out'] button").click()
    wait.until(EC.presence_of_element_located((By.ID, "key")))
    driver.get(BASE + "/console/notifications")
    wait.until(EC.presence_of_element_located((By.ID, "key")))
    check("/console/sign-in" in driver.current_url, "still signed in after signing out")


def markup_in_values_stays_text(driver, wait):
    """A reflected `next` and a stored label render as text: no element of theirs exists."""
    driver.get(BASE + "/console/sign-in?next=" + urllib.parse.quote(HOSTILE_NEXT, safe=""))
    wait.until(EC.presence_of_element_located((By.ID, "key")))
    time.sleep(1.5)  # what a meta refresh of 0 s would have had to redirect
    check("/console/sign-in" in driver.current_url, "the sign-in page with a hostile next went to %s" % driver.current_url)
    check(not driver.find_elements(By.CSS_SELECTOR, "meta[http-equiv]"), "next put a <meta http-equiv> in the page")
    check(driver.find_element(By.CSS_SELECTOR, "input[name=next]").get_attribute("value") == HOSTILE_NEXT,
          "next is not kept as the text it was")

    sign_in(driver, MODERATOR_KEY, wait)
    driver.get(BASE + "/console/notifications?sentAfter=&thread=" + urllib.parse.quote(HOSTILE_THREAD, safe=""))
    rows = wait.until(EC.presence_of_all_elements_located((By.CSS_SELECTOR, "#notifications tbody tr")))
    time.sleep(1.5)
    check("/console/notifications" in driver.current_url, "the list with a hostile label went to %s" % driver.current_url)
    check(len(rows) == 1, "the hostile label's search found %d rows" % len(rows))
    check(not driver.find_elements(By.CSS_SELECTOR, "meta[http-equiv], a[href^='https://evil']"), "a label became markup")
    check("<meta" in rows[0].text, "the label is not shown as text: %r" % rows[0].text)
    check(driver.find_element(By.ID, "thread").get_attribute("value") == HOSTILE_THREAD, "the search field lost the label")
    rows[0].find_element(By.CSS_SELECTOR, "a.reference").click()
    wait.until(EC.presence_of_element_located((By.ID, "device-count")))
    check(not driver.find_elements(By.CSS_SELECTOR, "meta[http-equiv], a[href^='https://evil']"), "a label became markup")
    # Tokens are masked for a key without admin, as the API never shows them to read keys.
    tokens = [code.text for code in driver.find_elements(By.CSS_SELECTOR, "code.token")]
    check(tokens and all("…" in token and len(token) < 20 for token in tokens), "device tokens shown whole: %s" % tokens[:3])
    driver.find_element(By.CSS_SELECTOR, "form[action='/console/sign-out'] button").click()
    wait.until(EC.presence_of_element_located((By.ID, "key")))


CANCELLED = "spring-sale"
CANCELLED_DEVICES = 1000
CANCEL_REASON = "Wrong promotion: stop it"


def moderator_cancels_a_running_retraction(driver, wait):
    """The promo app's APNs cannot be reached, so its retraction runs until cancelled."""
    sign_in(driver, MODERATOR_KEY, wait)
    driver.get(BASE + "/console/notification?app=promo&reference=" + CANCELLED)
    wait.until(EC.presence_of_element_located((By.ID, "device-count")))
    driver.find_element(By.ID, "reason").send_keys("Promotion sent by mistake")
    driver.find_element(By.ID, "dry-run").click()
    wait.until(EC.presence_of_element_located((By.ID, "confirm"))).click()
    wait.until(EC.presence_of_element_located((By.ID, "cancel-form")))
    state = driver.find_element(By.CSS_SELECTOR, '[data-field="state"]').text
    check(state in ("queued", "sending"), "the retraction to cancel is %s" % state)
    every_field_is_labelled(driver, "retraction")
    # A reason is required: the browser will not send the form without one.
    driver.find_element(By.ID, "cancel-button").click()
    check(driver.find_elements(By.ID, "cancel-form"), "the cancel form was sent without a reason")
    driver.find_element(By.ID, "cancel-reason").send_keys(CANCEL_REASON)
    shot(driver, "cancel.png")
    button = driver.find_element(By.ID, "cancel-button")
    button.click()
    # The form posts, and the retraction's page comes back: wait for the old page to go first.
    wait.until(EC.staleness_of(button))
    WebDriverWait(driver, 30, ignored_exceptions=[NoSuchElementException, StaleElementReferenceException]).until(
        lambda d: d.find_element(By.CSS_SELECTOR, '[data-field="state"]').text == "cancelled")
    counts = {name: int(driver.find_element(By.CSS_SELECTOR, '[data-field="%s"]' % name).text)
              for name in ("sent", "dead", "failed", "pending", "spared")}
    check(counts["spared"] == CANCELLED_DEVICES and counts["sent"] + counts["dead"] + counts["failed"] == 0,
          "the cancelled retraction's counts: %s" % counts)
    check(CANCEL_REASON in driver.find_element(By.ID, "cancelled").text, "the page does not say why it was cancelled")
    check(not driver.find_elements(By.ID, "cancel-form"), "a cancelled retraction still offers Cancel")
    shot(driver, "cancelled.png")
    driver.find_element(By.LINK_TEXT, "Audit").click()
    wait.until(EC.presence_of_element_located((By.ID, "audit")))
    rows = [row.text for row in driver.find_elements(By.CSS_SELECTOR, "#audit tbody tr")]
    check(any("retraction.cancelled" in row and CANCEL_REASON in row and "trust-and-safety" in row for row in rows),
          "the audit log has no cancel by the moderator: %r" % rows)
    driver.find_element(By.CSS_SELECTOR, "form[action='/console/sign-out'] button").click()
    wait.until(EC.presence_of_element_located((By.ID, "key")))


CAMPAIGN = "cyber-monday"
CAMPAIGN_REASON = "The cyber-monday offer went out with the wrong prices"


def moderator_retracts_a_campaign(driver, wait):
    """scripts/console-test records the campaign twice, three and two days back:
    the list searched from two and a half days back shows the second send, and
    its "retract this campaign" takes that range, so only its 100 devices."""
    sign_in(driver, MODERATOR_KEY, wait)
    since = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=2, hours=12)).strftime("%Y-%m-%dT%H:%M")
    driver.get(BASE + "/console/notifications?" + urllib.parse.urlencode(
        {"app": "newsroom", "campaign": CAMPAIGN, "sentAfter": since}))
    rows = wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#notifications tbody tr"))
    check([row.find_element(By.CSS_SELECTOR, "a.reference").text for row in rows] == [CAMPAIGN + "-2"],
          "the campaign's search found %r" % [row.text for row in rows])
    rows[0].find_element(By.LINK_TEXT, "retract this campaign").click()

    form = wait.until(EC.presence_of_element_located((By.ID, "retract-many-form")))
    check(driver.find_element(By.ID, "value").get_attribute("value") == CAMPAIGN, "the form is not filled with the campaign")
    check(Select(driver.find_element(By.ID, "by")).first_selected_option.text == "campaign", "the form does not retract by campaign")
    check(Select(driver.find_element(By.ID, "app")).first_selected_option.text == "newsroom", "the form's app is not newsroom")
    check(driver.find_element(By.ID, "sentAfter").get_attribute("value") == since, "the list's range is not carried over")
    every_field_is_labelled(driver, "retract-many")
    driver.find_element(By.ID, "reason").send_keys(CAMPAIGN_REASON)
    shot(driver, "retract-many.png")
    form.submit()

    confirm = wait.until(EC.presence_of_element_located((By.ID, "confirm")))
    devices = driver.find_element(By.ID, "dry-run-devices").text
    notifications = driver.find_element(By.ID, "dry-run-notifications").text
    check(devices == "100" and notifications == "1 notification",
          "the dry run counted %s devices in %s, not 100 in 1 notification" % (devices, notifications))
    check(CAMPAIGN in driver.find_element(By.ID, "target").text, "the confirm page does not name the campaign")
    shot(driver, "retract-many-confirm.png")
    confirm.click()

    wait.until(EC.staleness_of(confirm))
    WebDriverWait(driver, 30, ignored_exceptions=[NoSuchElementException, StaleElementReferenceException]).until(
        lambda d: d.find_element(By.CSS_SELECTOR, '[data-field="state"]').text == "done")
    sent = driver.find_element(By.CSS_SELECTOR, '[data-field="sent"]').text
    check(sent == "100", "the campaign's retraction sent %s, not 100" % sent)
    driver.find_element(By.LINK_TEXT, "Audit").click()
    wait.until(EC.presence_of_element_located((By.ID, "audit")))
    rows = [row.text for row in driver.find_elements(By.CSS_SELECTOR, "#audit tbody tr")]
    check(any("retraction.created" in row and 'campaign "%s"' % CAMPAIGN in row and CAMPAIGN_REASON in row
              and "100 devices" in row and "dry run" not in row for row in rows),
          "the audit log has no campaign retraction of 100 devices: %r" % rows)
    check(any('campaign "%s"' % CAMPAIGN in row and "dry run" in row for row in rows), "the audit log has no dry run of the campaign")
    driver.find_element(By.CSS_SELECTOR, "form[action='/console/sign-out'] button").click()
    wait.until(EC.presence_of_element_located((By.ID, "key")))


BROADCAST = "flash-sale"
APPROVAL_REASON = "Checked with the campaign's owner: pull it"


def a_second_key_approves_a_broadcast(driver, wait):
    """broadcast's retractions of more than 10 devices wait for approval: the
    moderator's own is not theirs to approve; the second reviewer approves it."""
    sign_in(driver, MODERATOR_KEY, wait)
    driver.get(BASE + "/console/notification?app=broadcast&reference=" + BROADCAST)
    wait.until(EC.presence_of_element_located((By.ID, "device-count")))
    driver.find_element(By.ID, "reason").send_keys("The flash sale went out a day early")
    driver.find_element(By.ID, "dry-run").click()
    confirm = wait.until(EC.presence_of_element_located((By.ID, "confirm")))
    note = driver.find_element(By.ID, "needs-approval").text
    check("approval threshold of 10 devices" in note, "the confirm page does not say it will wait: %r" % note)
    confirm.click()
    wait.until(EC.staleness_of(confirm))
    state = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, '[data-field="state"]'))).text
    check(state == "awaiting-approval", "the broadcast's retraction is %s, not awaiting-approval" % state)
    check("Awaiting approval" in driver.find_element(By.ID, "approval").text, "the page does not say it awaits approval")
    check(not driver.find_elements(By.ID, "approval-panel"), "the key that asked is offered to approve its own retraction")
    retraction_url = driver.current_url
    retraction_path = urllib.parse.urlparse(retraction_url).path
    status = post_from_page(driver, retraction_path + "/approve", {"reason": "my own"})
    check(status == 403, "approving one's own retraction answered %s, not 403" % status)
    shot(driver, "awaiting-approval.png")
    driver.find_element(By.CSS_SELECTOR, "form[action='/console/sign-out'] button").click()
    wait.until(EC.presence_of_element_located((By.ID, "key")))

    sign_in(driver, APPROVER_KEY, wait)
    driver.get(retraction_url)
    approve = wait.until(EC.presence_of_element_located((By.ID, "approve-button")))
    every_field_is_labelled(driver, "approval")
    # A reason is required: the browser will not send the form without one.
    approve.click()
    check(driver.find_elements(By.ID, "approval-panel"), "the approval was sent without a reason")
    driver.find_element(By.ID, "approval-reason").send_keys(APPROVAL_REASON)
    shot(driver, "approval.png")
    approve = driver.find_element(By.ID, "approve-button")
    approve.click()
    wait.until(EC.staleness_of(approve))
    WebDriverWait(driver, 30, ignored_exceptions=[NoSuchElementException, StaleElementReferenceException]).until(
        lambda d: d.find_element(By.CSS_SELECTOR, '[data-field="state"]').text == "done")
    sent = driver.find_element(By.CSS_SELECTOR, '[data-field="sent"]').text
    check(sent == "100", "the approved retraction sent %s, not 100" % sent)
    decided = driver.find_element(By.ID, "approval").text
    check("Approved by api-key:second-reviewer" in decided and APPROVAL_REASON in decided, "the page says %r" % decided)
    driver.find_element(By.LINK_TEXT, "Audit").click()
    wait.until(EC.presence_of_element_located((By.ID, "audit")))
    rows = [row.text for row in driver.find_elements(By.CSS_SELECTOR, "#audit tbody tr")]
    check(any("retraction.approved" in row and APPROVAL_REASON in row and "second-reviewer" in row for row in rows),
          "the audit log has no approval by the second reviewer: %r" % rows)
    driver.find_element(By.CSS_SELECTOR, "form[action='/console/sign-out'] button").click()
    wait.until(EC.presence_of_element_located((By.ID, "key")))


def viewer_may_only_look(driver, wait):
    sign_in(driver, VIEWER_KEY, wait)
    rows = driver.find_elements(By.CSS_SELECTOR, "#notifications tbody tr")
    # Only newsroom's two: the chat app is not this key's.
    check(len(rows) == 2, "a newsroom-only key sees %d notifications" % len(rows))
    check(all("msg-77" not in row.text for row in rows), "another app's notification is shown")
    driver.get(BASE + "/console/notification?app=newsroom&reference=breaking-2026-11-26")
    wait.until(EC.presence_of_element_located((By.ID, "device-count")))
    check(not driver.find_elements(By.ID, "dry-run"), "a key without retract sees the Retract form")
    check(not driver.find_elements(By.ID, "retract-many-link"), "a key without retract is offered Retract many")
    driver.get(BASE + "/console/retract-many?app=newsroom&by=campaign&value=" + CAMPAIGN)
    check("Not allowed" in driver.find_element(By.TAG_NAME, "h1").text, "a key without retract is shown the retract-many form")
    driver.get(BASE + "/console/notification?app=newsroom&reference=breaking-2026-11-26")
    wait.until(EC.presence_of_element_located((By.ID, "device-count")))
    check(driver.find_elements(By.ID, "no-retract"), "the page does not say why there is no Retract button")
    for path in ("/console/dry-run", "/console/retract"):
        status = post_from_page(
            driver, path, {"app": "newsroom", "reference": "breaking-2026-11-26", "reason": "trying anyway"})
        check(status == 403, "%s by a key without retract answered %s, not 403" % (path, status))
    driver.get(BASE + "/console/notification?app=chat&reference=msg-77")
    check("Not found" in driver.find_element(By.TAG_NAME, "h1").text, "another app's notification page is shown")


def main():
    driver = browser()
    wait = WebDriverWait(driver, 20)
    try:
        moderator_takes_back_the_broadcast(driver, wait)
        markup_in_values_stays_text(driver, wait)
        moderator_cancels_a_running_retraction(driver, wait)
        moderator_retracts_a_campaign(driver, wait)
        a_second_key_approves_a_broadcast(driver, wait)
        viewer_may_only_look(driver, wait)
    except Exception:
        driver.save_screenshot(os.path.join(SHOTS, "failure.png"))
        print("console test failed at %s; screenshot %s" % (driver.current_url, os.path.join(SHOTS, "failure.png")), file=sys.stderr)
        raise
    finally:
        driver.quit()
    print("console test: moderator retracted %d devices, cancelled a retraction of %d and retracted a campaign's 100,"
          " a second key approved a broadcast's 100, viewer refused; screenshots in %s" % (WRONG_DEVICES, CANCELLED_DEVICES, SHOTS))


if __name__ == "__main__":
    main()
